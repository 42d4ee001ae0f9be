import type { Row } from "../drivers/driver.ts";
import type { STATUSES } from "./sql/lease.ts";
import { storedJson } from "../json/depth.ts";

/** Where a job is in its life: queued, scheduled (due later), leased, done, dead or cancelled. */
export type JobStatus = (typeof STATUSES)[number];

/** A job as stored: its lease (owner, until, fence) and its place in a queue. */
export type Job = {
  id: string;
  queue: string;
  /** What its queue's per-key settings limit it by (docs/queues.md#keys), or null. */
  key: string | null;
  /** The JSON value given at enqueue, or null. */
  payload: unknown;
  /** Higher is claimed first. */
  priority: number;
  /** Claim-next leaves the job alone before this time, unless it had come when the job was enqueued (and no fail set it since): then the job is due whatever the clock reads later. */
  runAt: number;
  /** The holder of the lease, or null when nobody holds it. */
  owner: string | null;
  /** The lease is valid while `until > now`. */
  until: number;
  /** Raised by one at every claim; never lowered, never reused. */
  fence: number;
  result: string | null;
  /** Completed; a dead or cancelled job is not done. */
  done: boolean;
  /** At the time it was read. */
  status: JobStatus;
  /** Claims so far; a failure or expiry on the last one (`maxAttempts`) makes the job dead. */
  attempts: number;
  maxAttempts: number;
  /** Why the last attempt failed, or how its lease ended. */
  lastError: string | null;
  /** The JSON value a current lease last reported with a renew, or null; kept when a lease ends. */
  progress: unknown;
  /** The W3C traceparent the job was enqueued with (its producer's span), or null; a worker continues that trace. */
  traceparent: string | null;
  /** The W3C tracestate that came with it, or null. */
  tracestate: string | null;
  createdAt: number;
  updatedAt: number;
  /** The dedup key it was enqueued with (docs/queues.md#once-per-key), or null. */
  dedupKey: string | null;
  /** When its dedup window ends (enqueued with dedupTtlMs), or null. */
  dedupUntil: number | null;
  /** The job whose enqueue with `supersede` cancelled this one, or null. */
  supersededBy: string | null;
  /** The steps its handlers recorded (migrations/0036), by name: each one's result, the fence of the lease that recorded it, and when; `{}` for none. */
  steps: Record<string, StepRecord>;
};

/** A step as a job keeps it: its result (the JSON value recorded), the fence of the lease that recorded it, and when. */
export type StepRecord = { result: unknown; fence: number; at: number };

/** A step recorded, with its name. */
export type Step = { name: string } & StepRecord;

/** A job's steps from their column (STEPS in src/store/sql/lease.ts: NULL for none), each result parsed from its JSON text. */
function stepsOf(column: unknown): Record<string, StepRecord> {
  const steps: Record<string, StepRecord> = {};
  if (typeof column !== "string") return steps;
  for (const [name, step] of Object.entries(JSON.parse(column) as Record<string, { result: string; fence: number; at: number }>)) {
    steps[name] = { result: parsed(step.result), fence: step.fence, at: step.at };
  }
  return steps;
}

/** A step as `readStep` or the INSERT of `recordStep` (src/store/sql/steps.ts) answers it, its result parsed. */
export function stepFromRow(row: Row): Step {
  return { name: row.name as string, result: parsed(row.result), fence: row.fence as number, at: row.at as number };
}

/** A JSON text column as its value (one nested too deep as its text: storedJson); NULL as null, the value of the JSON text "null". */
function parsed(column: unknown): unknown {
  return storedJson(String(column));
}

/** Reads a `jobs` row, selected with its `status`, into a Job. */
export function jobFromRow(row: Row): Job {
  return {
    id: row.id as string,
    queue: row.queue as string,
    key: (row.key as string | null | undefined) ?? null,
    payload: parsed(row.payload),
    priority: row.priority as number,
    runAt: row.run_at as number,
    owner: row.owner as string | null,
    until: row.until as number,
    fence: row.fence as number,
    result: row.result as string | null,
    done: row.done === 1 && row.dead === 0 && row.cancelled === 0,
    status: row.status as JobStatus,
    attempts: row.attempts as number,
    maxAttempts: row.max_attempts as number,
    lastError: row.last_error as string | null,
    progress: parsed(row.progress),
    traceparent: row.traceparent as string | null,
    tracestate: row.tracestate as string | null,
    createdAt: row.created_at as number,
    updatedAt: row.updated_at as number,
    dedupKey: (row.dedup_key as string | null | undefined) ?? null,
    dedupUntil: (row.dedup_until as number | null | undefined) ?? null,
    supersededBy: (row.superseded_by as string | null | undefined) ?? null,
    steps: stepsOf(row.steps),
  };
}

/** A lease taken by a claim: the job as it is now held, with its fence and expiry. */
export type Lease = { job: Job; fence: number; until: number };

/**
 * A UTF-16 unit's place in code point order, which is UTF-8's byte order: the
 * units of U+E000..U+FFFF come after those below U+D800, as in UTF-16, but
 * before the surrogates (D800..DFFF), which encode code points from U+10000.
 */
function unitRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/**
 * Two distinct ids in SQLite's order of text (BINARY: by their UTF-8 bytes,
 * that is by code points). JavaScript's < compares UTF-16 units instead, and
 * puts "\u{1F600}" (a surrogate pair) before "\uFF01". The first unit that
 * differs decides (ids are well-formed: a pair's first halves are equal when
 * its second halves differ), and a prefix comes first.
 */
function idOrder(a: string, b: string): number {
  const common = Math.min(a.length, b.length);
  for (let i = 0; i < common; i++) {
    const [x, y] = [a.charCodeAt(i), b.charCodeAt(i)];
    if (x !== y) return unitRank(x) - unitRank(y);
  }
  return a.length - b.length;
}

/** Claim order, as the claim's ORDER BY: highest priority first, then the job due longest, then the oldest, then by id. */
function claimOrder(a: Job, b: Job): number {
  return b.priority - a.priority || a.runAt - b.runAt || a.createdAt - b.createdAt || idOrder(a.id, b.id);
}

/** The leases of the rows a claim-next returned (RETURNING gives no order), in claim order. */
export function leasesOf(rows: Row[]): Lease[] {
  return rows.map(jobFromRow).sort(claimOrder).map((job) => ({ job, fence: job.fence, until: job.until }));
}

/** One entry of a job's history: an accepted transition, or a refused write with a lease. */
export type JobEvent = {
  seq: number;
  jobId: string;
  queue: string;
  at: number;
  /** enqueued, claimed, pushed, renewed, completed, released, failed, expired, dead, retried, cancelled, deleted, or refused. */
  kind: string;
  /** For a refusal: renew, complete, release, fail or step; for a push delivery (pushed), its outcome: success, accepted, failure, timeout or unreachable. */
  action: string | null;
  /** Who acted, with which fence; for a refusal, the owner and fence presented; for a cancel, who cancelled (`by`) and the job's fence. */
  owner: string | null;
  fence: number | null;
  /** For a refusal: the job's owner and fence at that moment. */
  currentOwner: string | null;
  currentFence: number | null;
  /** Why: of a failure, an expiry or a death; of a cancel, the reason given (or null). */
  error: string | null;
  /** For a renewed event: the job's progress after the latest renew it stands for (null: none reported). */
  progress: unknown;
  /** For a push delivery: the endpoint's HTTP status, or null when no answer came; null for every other event. */
  httpStatus: number | null;
  /** For a push delivery: from the request sent to the answer read (or given up); null for every other event. */
  durationMs: number | null;
  /** How many times it happened: the renews of one lease, or the same stale lease refused again, are one event. */
  count: number;
  /** When it last happened; `at` is the first time. */
  lastAt: number;
};

/** Reads an `events` row; a push delivery keeps its status and time as JSON in `progress` (migrations/0031). */
export function eventFromRow(row: Row): JobEvent {
  const delivery = row.kind === "pushed" ? (parsed(row.progress) as { httpStatus: number | null; durationMs: number } | null) : null;
  return {
    seq: row.seq as number,
    jobId: row.job_id as string,
    queue: row.queue as string,
    at: row.at as number,
    kind: row.kind as string,
    action: row.action as string | null,
    owner: row.owner as string | null,
    fence: row.fence as number | null,
    currentOwner: row.current_owner as string | null,
    currentFence: row.current_fence as number | null,
    error: row.error as string | null,
    progress: row.kind === "pushed" ? null : parsed(row.progress),
    httpStatus: delivery?.httpStatus ?? null,
    durationMs: delivery?.durationMs ?? null,
    count: row.count as number,
    lastAt: (row.last_at ?? row.at) as number,
  };
}
