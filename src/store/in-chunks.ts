import { HOUSEKEEPING_CHUNK, type HousekeepingOptions } from "./shapes.ts";
import * as check from "./validate.ts";

/** Runs `chunk(size)` until it answers false (it was not full) or the options say stop (see HousekeepingOptions). */
export async function inChunks(options: HousekeepingOptions, chunk: (size: number) => Promise<boolean>): Promise<void> {
  const size = check.positiveInt("chunkSize", options.chunkSize ?? HOUSEKEEPING_CHUNK);
  const most = options.maxChunks === undefined ? Number.POSITIVE_INFINITY : check.positiveInt("maxChunks", options.maxChunks);
  for (let done = 0; done < most && !options.signal?.aborted; done++) {
    if (done > 0) await new Promise((resolve) => (globalThis.setImmediate ?? setTimeout)(resolve)); // let requests in between two transactions
    if (!(await chunk(size))) return;
  }
}
