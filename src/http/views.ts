import type { Job, Lease } from "../store/job.ts";
import type { LeaseOutcome } from "../store/refusal.ts";
import type { Settled } from "../store/shapes.ts";
import type { Claimed } from "../wait/long-poll.ts";
import { storedJson } from "../json/depth.ts";
import { linkJobTrace } from "../tracing/job-span.ts";

// The job, the lease and a many-lease call's outcomes as the API shows them,
// from what the store answers. The routes answer them as JSON, and the
// client's calls in the same process (src/client/in-process/) answer them as
// they are, so the two transports answer the same: nothing here may import
// zod, Hono or the store's code.

/** A job as the API shows it: the result parsed back into the JSON value it was stored from. */
export function jobView(job: Job) {
  return { ...job, result: job.result === null ? null : parseOr(job.result) };
}

function parseOr(text: string): unknown {
  try {
    return storedJson(text); // a result stored nested deeper than the limit comes back as its text
  } catch {
    return text; // a result stored through the store API as plain text
  }
}

/** A lease as the API shows it: its fence, its end and its job. */
export const leaseView = (lease: Lease) => {
  linkJobTrace(lease.job); // every lease handed out, by whichever route: the request's span links to the job's trace
  return { fence: lease.fence, until: lease.until, job: jobView(lease.job) };
};

/** One lease of a many-lease call: its answer, or the error a single call would answer, in the API's shape. */
export function outcomeView<T extends object>(outcome: LeaseOutcome<T>) {
  if (!("error" in outcome)) return outcome;
  const { code, message } = outcome.error;
  const details = "details" in outcome.error ? outcome.error.details : undefined; // LeaseLost has them, NotFound none
  return { id: outcome.id, error: { code, message, ...(details && { details }) } };
}

/** A claim-next's answer: the leases; with waitMs, how long it waited; stopped short by the rate limit, when the next token is due. */
export const claimedView = ({ leases, waitedMs, retryAfterMs }: Claimed, waited: boolean) => ({
  leases: leases.map(leaseView),
  ...(waited && { waitedMs }),
  ...(retryAfterMs !== undefined && { retryAfterMs }),
});

/** A job whose lease a complete or fail ended, with the leases taken when `next` was asked (and only then). */
export const settledView = (settled: Settled, next: unknown) => ({ job: jobView(settled.job), ...(next !== undefined && { leases: settled.leases.map(leaseView) }) });
