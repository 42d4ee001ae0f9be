import { readFile } from "node:fs/promises";
import type { LeaseClient } from "../client/lease-client.ts";
import type { NewJobRequest } from "../client/types.ts";
import { UsageError } from "./exit-codes.ts";

/** The most jobs the server takes in one call (MAX_MANY in src/http/shapes.ts); a longer input is sent in calls of this size. */
const PER_CALL = 1_000;

/**
 * Reads jobs as JSON lines (one object `{ id, key?, payload?, priority?, runAt?,
 * delayMs?, maxAttempts? }` per line; blank lines skipped) and says which line
 * is wrong before anything is sent.
 */
export function parseJobLines(text: string): NewJobRequest[] {
  const jobs: NewJobRequest[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === "") return;
    let job: unknown;
    try {
      job = JSON.parse(line);
    } catch {
      throw new UsageError(`line ${i + 1} is not JSON: ${line.slice(0, 80)}`);
    }
    if (job === null || typeof job !== "object" || Array.isArray(job) || typeof (job as { id?: unknown }).id !== "string") {
      throw new UsageError(`line ${i + 1} must be a JSON object with a string "id", like {"id":"invoice-42","payload":{"amount":120}}`);
    }
    jobs.push(job as NewJobRequest);
  });
  if (jobs.length === 0) throw new UsageError("no jobs to enqueue: give one JSON object per line");
  return jobs;
}

/** enqueue-many: the jobs of a file (or of standard input) into one queue, 1,000 per call; answers how many were created. */
export async function enqueueMany(queue: string, file: string | undefined, client: LeaseClient, stdin: () => Promise<string>) {
  const text = file === undefined || file === "-" ? await stdin() : await readFile(file, "utf8").catch((error: Error) => {
    throw new UsageError(`cannot read ${file}: ${error.message}`);
  });
  const jobs = parseJobLines(text);
  const answers = [];
  for (let start = 0; start < jobs.length; start += PER_CALL) answers.push(...(await client.enqueueMany(queue, jobs.slice(start, start + PER_CALL))));
  const created = answers.filter((answer) => answer.created).length;
  const existed = answers.length - created;
  return {
    json: { jobs: answers },
    text: `enqueued ${created} of ${answers.length} jobs in queue ${queue}${existed === 0 ? "" : `; ${existed} existed already and did not change`}`,
  };
}
