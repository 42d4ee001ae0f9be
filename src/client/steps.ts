import { LeaseLostError, NotFoundError } from "./errors.ts";
import type { LeaseClient } from "./lease-client.ts";
import type { Lease } from "./types.ts";

/**
 * A handler's `step(name, fn)`: the result of step `name` of its job, run at
 * most once per job whatever the leases. A step recorded already, by this
 * lease or an earlier one, answers its recorded result without running `fn`;
 * otherwise `fn` runs and its result (undefined as null) is recorded under
 * the lease, and answered as recorded: through JSON, as a resumed step's is.
 * Refused as stale (the lease is lost: expired, taken over, cancelled), it
 * throws the LeaseLostError, and the handler's result is never stored.
 */
export type StepFn = <T>(name: string, fn: () => Promise<T> | T) => Promise<T>;

/**
 * The `step` of one lease's handler, starting from the steps its lease was
 * handed (`job.steps`). Once the lease is lost (`signal` aborted), a step
 * runs nothing and throws why; a refusal of a step as stale (LeaseLostError,
 * or NotFoundError: the job was deleted) is told to `lost` first, which ends
 * the lease in its holder's hands, so that its result is dropped.
 */
export function stepsOf(client: LeaseClient, lease: Lease, held: { owner: string; signal: AbortSignal; lost: (error: LeaseLostError | NotFoundError) => void }): StepFn {
  const { job, fence } = lease;
  const results = new Map<string, Promise<unknown>>(Object.entries(job.steps).map(([name, step]) => [name, Promise.resolve(step.result)]));
  const record = async (name: string, fn: () => unknown): Promise<unknown> => {
    held.signal.throwIfAborted();
    const value = await fn();
    try {
      const { step } = await client.step(job.id, name, { owner: held.owner, fence, result: value === undefined ? null : value });
      return step.result;
    } catch (error) {
      if (error instanceof LeaseLostError || error instanceof NotFoundError) held.lost(error);
      throw error;
    }
  };
  return <T>(name: string, fn: () => Promise<T> | T): Promise<T> => {
    // One run per name, even when the handler calls it again before the first is recorded; a run that failed may be tried again.
    let result = results.get(name);
    if (result === undefined) {
      result = record(name, fn);
      results.set(name, result);
      result.catch(() => results.delete(name));
    }
    return result as Promise<T>;
  };
}
