import type { ObjectStorage } from "../../drivers/durable-object-sql.ts";

/** The storage's alarm, as a queue's object arms it. */
export type AlarmStorage = ObjectStorage & { setAlarm(at: number): Promise<void> };

const SECOND = 1_000;
const MINUTE = 60_000;

/** How long after a failed send the alarm comes back for the unbinds still pending. */
export const UNBIND_RETRY_MS = MINUTE;

/**
 * When something in a queue's object must happen without a request, one row
 * of index lookups: the earliest end of a held lease (`lease`: expired ones
 * included, which are due now), the next fire of a schedule (`fire`), and
 * when the oldest done job and the oldest deletion pass the retention
 * (`finished`, `deleted`: the purge of a job, and of a deleted job's history), and the end of the first
 * dedup window (`window`, migrations/0035: the purge lets its key go, though its job may be long gone). A job that comes due needs nothing: nobody
 * must act for it, and a claim waiting for it has its own timer.
 */
function dueTimes(queue: string, retentionMs: number) {
  return {
    sql: `SELECT (SELECT min(until) FROM jobs WHERE queue = ?1 AND done = 0 AND owner IS NOT NULL) AS lease,
                 (SELECT min(next_fire_at) FROM schedules) AS fire,
                 (SELECT min(updated_at) FROM jobs WHERE done = 1) + ?2 AS finished,
                 (SELECT min(at) FROM history WHERE kind = 'deleted') + ?2 AS deleted,
                 (SELECT min(until) FROM dedup_keys WHERE until IS NOT NULL) AS window`,
    args: [queue, retentionMs],
  };
}

/** `at` rounded up to a whole `step`. */
const ceil = (at: number, step: number) => Math.ceil(at / step) * step;

/**
 * QueueAlarm keeps a queue's object's one alarm at the earliest thing due:
 * a lease's end (rounded up to the second, so leases ending together cost one
 * alarm), a schedule's fire, a purge (rounded up to the minute, as the D1
 * mode's cron purges: a purge a job would cost an alarm a job), or unbinds
 * left pending by a failed send.
 *
 * setAlarm is billed as a row written, so `arm` sets it only when the earliest
 * thing due comes before the alarm already armed (kept in memory, read from
 * getAlarm when the object starts). One armed too early (a lease renewed or
 * completed since) simply rings, finds less to do, and is armed again at what
 * is then the earliest: at most one alarm per lease length, however many leases.
 */
export class QueueAlarm {
  readonly #storage: AlarmStorage;
  readonly #retentionMs: number;
  #armed: number | null;
  /** How many times this object set its alarm since it started (the cost tests read it). */
  sets = 0;

  constructor(storage: AlarmStorage, armed: number | null, retentionMs: number) {
    this.#storage = storage;
    this.#armed = armed;
    this.#retentionMs = retentionMs;
  }

  /** The alarm rang: none is armed until `arm` says so. */
  rang(): void {
    this.#armed = null;
  }

  /** When the alarm is armed for, or null. */
  get armed(): number | null {
    return this.#armed;
  }

  /**
   * arm sets the alarm at the earliest thing due for `queue` (not before
   * `notBefore`, if given), unless one is armed no later; `unbinding`: unbinds
   * are pending; `pushAt`: when a pushed queue next has a job to push (to the second).
   */
  async arm(queue: string, now: number, unbinding: boolean, notBefore?: number, pushAt: number | null = null): Promise<void> {
    const next = this.next(queue, now, unbinding);
    const pushed = pushAt === null ? null : Math.max(ceil(pushAt, SECOND), now);
    const due = next === null ? pushed : pushed === null ? next : Math.min(next, pushed);
    const at = due === null || notBefore === undefined ? due : Math.max(due, notBefore);
    if (at === null || (this.#armed !== null && this.#armed <= at)) return;
    await this.#storage.setAlarm(at);
    this.#armed = at;
    this.sets++;
  }

  /** The earliest thing due for `queue`, or null when nothing is. */
  next(queue: string, now: number, unbinding: boolean): number | null {
    const { sql, args } = dueTimes(queue, this.#retentionMs);
    const [row] = this.#storage.sql.exec(sql, ...args).toArray() as [{ lease: number | null; fire: number | null; finished: number | null; deleted: number | null; window: number | null }];
    const due = [
      row.lease === null ? null : ceil(row.lease, SECOND),
      // A fire still due after the alarm fired what it could is one this runtime cannot compute (fireDue skips it): look again in a minute.
      row.fire === null ? null : row.fire <= now ? now + MINUTE : row.fire,
      row.finished === null ? null : ceil(row.finished, MINUTE),
      row.deleted === null ? null : ceil(row.deleted, MINUTE),
      row.window === null ? null : ceil(row.window, MINUTE),
      unbinding ? now + UNBIND_RETRY_MS : null,
    ].filter((at): at is number => at !== null);
    return due.length === 0 ? null : Math.min(...due);
  }
}
