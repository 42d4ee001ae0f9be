import { type LeaseLostReason, LeaseLost, NotFound } from "./errors.ts";
import type { Job } from "./job.ts";

// Only explains a refusal that SQL already decided; it never decides one.

/** Why the write of (owner, fence) was refused, read from the job as it is now. */
export function leaseLostReason(current: Job, owner: string, fence: number): LeaseLostReason {
  if (fence < current.fence) return "superseded";
  if (fence !== current.fence || owner !== current.owner) return "not_owner";
  if (current.done) return "done";
  return "expired";
}

/** The error for a refused write with a lease: NotFound, or LeaseLost with its reason. */
export function refusal(id: string, current: Job | null, owner: string, fence: number): Error {
  if (current === null) return new NotFound(id);
  return new LeaseLost(id, leaseLostReason(current, owner, fence), current.fence);
}
