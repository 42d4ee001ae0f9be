import { type LeaseLostReason, LeaseLost, NotClaimable, type NotClaimableReason, NotFound, StepLimit } from "./errors.ts";
import { MAX_STEP_BYTES, MAX_STEPS } from "./sql/steps.ts";
import type { Row } from "../drivers/driver.ts";
import type { Job, JobStatus } from "./job.ts";

// Only explains a refusal that SQL already decided; it never decides one. The
// job is read after the write that changed nothing (src/store/store.ts), so a
// reason says how things stand then.

/** What a refusal's reason is read from: the job's lease and status as they are now. */
type Holder = Pick<Job, "owner" | "fence" | "status">;

/**
 * Why the write of (owner, fence) was refused, read from the job as it is now:
 * the lease's own fate first (superseded, not_owner), then the job's (done,
 * cancelled: a cancel keeps the owner and fence, so its holder is told so).
 */
export function leaseLostReason(current: Holder, owner: string, fence: number): LeaseLostReason {
  if (fence < current.fence) return "superseded";
  if (fence !== current.fence || owner !== current.owner) return "not_owner";
  if (current.status === "done") return "done";
  if (current.status === "cancelled") return "cancelled";
  return "expired";
}

/** The error for a refused write with a lease: NotFound, or LeaseLost with its reason. */
export function refusal(id: string, current: Holder | null, owner: string, fence: number): LeaseLost | NotFound {
  if (current === null) return new NotFound(id);
  return new LeaseLost(id, leaseLostReason(current, owner, fence), current.fence);
}

/** How one lease of a many-lease call ended: its answer, or the domain error that says why it was refused. */
export type LeaseOutcome<T> = ({ id: string } & T) | { id: string; error: LeaseLost | NotFound };

/**
 * Each presented lease's outcome, in order: `accepted(id)` unless it is among
 * the `refused` rows (see readRefused in src/store/sql/many.ts), whose job, or
 * its absence, says why.
 */
export function outcomes<T extends object>(presented: { id: string; fence: number }[], owner: string, refused: Row[], accepted: (id: string) => T): LeaseOutcome<T>[] {
  const rows = new Map(refused.map((row) => [row.lease_id as string, row]));
  return presented.map(({ id, fence }) => {
    const row = rows.get(id);
    if (row === undefined) return { id, ...accepted(id) };
    const current = row.found === 0 ? null : { owner: row.owner as string | null, fence: row.fence as number, status: row.status as JobStatus };
    return { id, error: refusal(id, current, owner, fence) };
  });
}

/**
 * Why a claim by id was refused, from the job and its queue as read after it
 * (`claimState` in src/store/sql/claim-next.ts): a job leased, done, dead or
 * cancelled says so by its status; a job nobody holds was refused by its
 * queue (paused, full, rate_limited), else by its key (key_full,
 * key_rate_limited, key_ordered); with neither (they changed since), full.
 */
function whyNotClaimable(row: Row): NotClaimableReason {
  const status = row.status as JobStatus;
  if (status === "leased" || status === "done" || status === "dead" || status === "cancelled") return status;
  return ((row.queue_refusal ?? row.key_refusal) as NotClaimableReason | null) ?? "full";
}

/** The error for a refused claim by id: NotFound, or NotClaimable with its reason, from a row of `claimState` (undefined: no such job). */
export function claimRefusal(id: string, row: Row | undefined): NotClaimable | NotFound {
  if (row === undefined) return new NotFound(id);
  const reason = whyNotClaimable(row);
  return new NotClaimable(id, reason, reason === "key_ordered" ? ((row.key_first as string | null) ?? undefined) : undefined);
}

/**
 * Why a step of (owner, fence) was not recorded, from the row of `readStep`
 * (src/store/sql/steps.ts; undefined: no such job): NotFound, or LeaseLost
 * unless the lease is current; then null if the step is there (recorded
 * already, which is no refusal), else StepLimit: the limit that `bytes` more
 * would go over.
 */
export function stepRefusal(id: string, row: Row | undefined, owner: string, fence: number, bytes: number): LeaseLost | NotFound | StepLimit | null {
  if (row === undefined) return new NotFound(id);
  const current = { owner: row.owner as string | null, fence: row.fence as number, status: row.status as JobStatus };
  if (current.owner !== owner || current.fence !== fence || current.status !== "leased") return refusal(id, current, owner, fence);
  if (row.step !== null) return null;
  const job = JSON.stringify(id);
  if ((row.step_count as number) >= MAX_STEPS) {
    return new StepLimit(id, "too_many_steps", MAX_STEPS, `job ${job} has recorded ${MAX_STEPS} steps, the most a job may; nothing was stored: make fewer, larger steps`);
  }
  const total = (row.step_bytes as number) + bytes;
  return new StepLimit(id, "steps_too_large", MAX_STEP_BYTES, `the results of the steps of job ${job} would take ${total} bytes as JSON, over the ${MAX_STEP_BYTES} a job may; nothing was stored: keep a large result elsewhere and record where it is`);
}
