import type { Statement } from "../drivers/driver.ts";
import { InvalidArgument } from "./errors.ts";
import type { EnqueueRequest } from "./shapes.ts";
import * as sqlDedup from "./sql/dedup.ts";
import * as check from "./validate.ts";

// How an enqueue holds its dedup key (issue 30): the request's fields checked
// into one of three ways, and the statements each adds around the INSERT
// (src/store/sql/dedup.ts). A bad combination is refused before the database
// is touched.

/** The longest dedup window, debounce, and bound on a debounce: 30 days. */
export const MAX_DEDUP_MS = 30 * 24 * 60 * 60 * 1000;

/** The way a job holds its dedup key, checked. */
export type DedupMode =
  | { kind: "window"; key: string; ttlMs: number }
  | { kind: "debounce"; key: string; debounceMs: number; maxMs: number }
  | { kind: "supersede"; key: string };

/** A whole number of ms from `least` to MAX_DEDUP_MS. */
function span(what: string, value: unknown, least = 1): number {
  if (Number.isSafeInteger(value) && (value as number) >= least && (value as number) <= MAX_DEDUP_MS) return value as number;
  throw new InvalidArgument(`${what} must be a whole number of ms from ${least} to ${MAX_DEDUP_MS} (30 days), got ${JSON.stringify(value) ?? String(value)}`);
}

/**
 * The dedup fields of job `job` (named with `prefix` in errors, "" or
 * "jobs[3]."), checked: null without a dedupKey; else exactly one of
 * dedupTtlMs, debounceMs or supersede: true. `oneAtATime` refuses debounce and
 * supersede, which a call of many jobs does not take.
 */
export function dedupMode(prefix: string, job: EnqueueRequest, oneAtATime = false): DedupMode | null {
  const { dedupTtlMs, debounceMs, debounceMaxMs, supersede } = job;
  if (supersede !== undefined && typeof supersede !== "boolean") throw new InvalidArgument(`${prefix}supersede must be true or false, got ${JSON.stringify(supersede)}`);
  const ways = [dedupTtlMs !== undefined && "dedupTtlMs", debounceMs !== undefined && "debounceMs", supersede === true && "supersede"].filter((way) => way !== false);
  const key = check.key(`${prefix}dedupKey`, job.dedupKey);
  if (key === null) {
    const given = ways[0] ?? (debounceMaxMs !== undefined ? "debounceMaxMs" : null);
    if (given !== null) throw new InvalidArgument(`${prefix}${given} needs a ${prefix}dedupKey: the key that the job is enqueued once for`);
    return null;
  }
  if (ways.length !== 1) throw new InvalidArgument(`${prefix}dedupKey takes exactly one of dedupTtlMs (a window), debounceMs (a debounce) or supersede: true, got ${ways.length === 0 ? "none" : ways.join(" and ")}`);
  if (debounceMaxMs !== undefined && debounceMs === undefined) throw new InvalidArgument(`${prefix}debounceMaxMs bounds a debounce: give it with debounceMs`);
  if (oneAtATime && ways[0] !== "dedupTtlMs") throw new InvalidArgument(`${prefix}${ways[0]} is for one job at a time: enqueue it with POST /v1/jobs; a call of many jobs takes dedupKey with dedupTtlMs`);
  if (dedupTtlMs !== undefined) return { kind: "window", key, ttlMs: span(`${prefix}dedupTtlMs`, dedupTtlMs) };
  if (debounceMs !== undefined) {
    if (job.runAt !== undefined || job.delayMs !== undefined) throw new InvalidArgument(`${prefix}debounceMs sets when the job runs: give no runAt or delayMs with it`);
    const checked = span(`${prefix}debounceMs`, debounceMs);
    return { kind: "debounce", key, debounceMs: checked, maxMs: debounceMaxMs === undefined ? MAX_DEDUP_MS : span(`${prefix}debounceMaxMs`, debounceMaxMs, checked) };
  }
  return { kind: "supersede", key };
}

/** An enqueue's statements, and where in their answers to read what it did: the job inserted, the job debounced, the job superseded, the key's holder. */
export type EnqueuePlan = { statements: Statement[]; inserted: number; debounced?: number; superseded?: number; holder?: number };

/** The job's row as `enqueue` (src/store/sql/lease.ts) takes it, less its dedup. */
type Insert = (dedup: { key: string; until: number | null; debounceUntil: number | null; onlyIf: string } | null) => Statement[];

/** The statements of an enqueue of job `id` in `queue` at `now` that holds its key as `mode` says, around `insert`. */
export function planEnqueue(id: string, queue: string, request: { payload: string | null; priority: number }, mode: DedupMode | null, now: number, insert: Insert): EnqueuePlan {
  if (mode === null) return { statements: insert(null), inserted: 0 };
  const { key } = mode;
  switch (mode.kind) {
    case "window":
      return {
        statements: [...insert({ key, until: now + mode.ttlMs, debounceUntil: null, onlyIf: sqlDedup.noWindow("?2", "?11", "?7") }), sqlDedup.holder(queue, key, now, id)],
        inserted: 0,
        holder: 2,
      };
    case "debounce": {
      const move = sqlDedup.debounce({ id, queue, key, payload: request.payload, priority: request.priority, debounceMs: mode.debounceMs, now });
      const added = insert({ key, until: null, debounceUntil: now + mode.maxMs, onlyIf: sqlDedup.noWaiting("?2", "?11") });
      return { statements: [move, ...added], inserted: 1, debounced: 0 };
    }
    case "supersede":
      return { statements: [...sqlDedup.supersede(queue, key, id, now), ...insert({ key, until: null, debounceUntil: null, onlyIf: "true" })], inserted: 2, superseded: 0 };
  }
}
