import { type Driver, readsOnly, type Statement } from "../drivers/driver.ts";
import { type Outcome, StorageUnavailable, type StorageReason } from "./errors.ts";

/** Why writes cannot succeed now: the reason of the storage failure they meet, or `stuck` (a write has waited longer than `stuckAfterMs`). */
export type HealthReason = StorageReason | "stuck";

/** Whether writes can succeed now; if not, why, in words a person can act on, and what a failed write's outcome was. */
export type Health = { ok: true } | { ok: false; reason: HealthReason; message: string; outcome?: Outcome };

/** Options of the store's write health; every one has a default. */
export type HealthOptions = {
  /** How long a write may wait (in the store, group commit's queue included) before health calls writes stuck; default STUCK_AFTER_MS. */
  stuckAfterMs?: number | undefined;
  /** How long health answers the failure of a write without probing again; default HEALTH_HOLD_MS. */
  holdMs?: number | undefined;
  /** Where a change of health is written, one line each; default none. */
  log?: ((line: string) => void) | undefined;
  /** Milliseconds from any origin, for the two durations above; default performance.now. Only tests replace it. */
  clock?: (() => number) | undefined;
};

/** The default of `stuckAfterMs`: the default statement and busy timeouts, past which a write fails anyway. */
export const STUCK_AFTER_MS = 5000;

/** The default of `holdMs`. */
export const HEALTH_HOLD_MS = 5000;

/** How long `check` waits for its probe before it answers that writes are waiting for the database (a lock held elsewhere). */
export const PROBE_WAIT_MS = 100;

// The probe: a write that changes nothing, yet needs what every write needs:
// a write transaction (so the write lock) on a database that accepts one, and
// an answer from a remote one. It cannot see a full disk (it adds no page) nor
// corruption (it reads no page): writes that meet those are held instead.
const PROBE: Statement = { sql: "DELETE FROM jobs WHERE 0", args: [] };


/**
 * WriteHealth knows whether writes can succeed, from the writes themselves and
 * from a probe, for /healthz:
 *
 * - Every call of the store goes through `watch`: a call that fails with
 *   StorageUnavailable is the current failure (a read's too: a database that
 *   cannot be read cannot be written); a write that succeeds clears it.
 * - `check` answers: not ok once any call met a corrupt database (corruption
 *   does not heal: it holds until the store is opened again); not ok `stuck`
 *   while a write has waited longer than `stuckAfterMs`; not ok with the
 *   current failure for `holdMs` after it happened (a probe cannot see every
 *   failure a write meets: a full disk); otherwise it runs the probe through
 *   the same driver, bounded by its timeouts, and answers by its outcome (which
 *   counts as a write's: held if it failed, clearing if it succeeded).
 * - Each change (healthy to failing, one reason to another, failing to
 *   healthy) is logged once.
 */
export class WriteHealth {
  readonly #stuckAfterMs: number;
  readonly #holdMs: number;
  readonly #log: (line: string) => void;
  readonly #clock: () => number;
  #failure: { error: StorageUnavailable; at: number } | undefined;
  #corrupt: StorageUnavailable | undefined;
  /** When each write in progress started, by a number of its own. */
  readonly #writing = new Map<number, number>();
  #writes = 0;
  /** The reason last logged, or undefined while healthy. */
  #reported: HealthReason | undefined;
  /** The probe on its way, and when it was sent: a check sends no second one while the first waits. */
  #probe: { answer: Promise<Health>; sent: number } | undefined;

  constructor(options: HealthOptions = {}) {
    this.#stuckAfterMs = positive("stuckAfterMs", options.stuckAfterMs ?? STUCK_AFTER_MS);
    this.#holdMs = positive("holdMs", options.holdMs ?? HEALTH_HOLD_MS);
    this.#log = options.log ?? (() => {});
    this.#clock = options.clock ?? (() => performance.now());
  }

  /** `driver`, with every call's outcome noted. */
  watch(driver: Driver): Driver {
    const noted = async <T>(write: boolean, call: () => Promise<T>): Promise<T> => {
      const id = ++this.#writes;
      if (write) this.#writing.set(id, this.#clock());
      try {
        const answer = await call();
        if (write) this.#succeeded();
        return answer;
      } catch (error) {
        if (error instanceof StorageUnavailable) this.#failed(error);
        throw error;
      } finally {
        this.#writing.delete(id);
      }
    };
    return {
      run: (statement) => noted(!readsOnly(statement), () => driver.run(statement)),
      batch: (statements) => noted(statements.length > 0, () => driver.batch(statements)),
      close: () => driver.close(),
      remote: driver.remote,
    };
  }

  /**
   * Whether writes can succeed now; runs the probe on `driver` (a watched one)
   * when nothing else decides. On a local file it answers within
   * PROBE_WAIT_MS: a probe that has not answered by then is waiting for a
   * write lock that another connection holds, which is said as `busy`.
   */
  async check(driver: Driver): Promise<Health> {
    const decided = this.#decided();
    if (decided) return decided;
    const probe = (this.#probe ??= { answer: this.#probed(driver), sent: this.#clock() });
    // A remote database's probe is bounded by its statement timeout, and its failure says what is wrong.
    if (driver.remote) return probe.answer;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), PROBE_WAIT_MS)));
    const answer = await Promise.race([probe.answer, late]).finally(() => clearTimeout(timer));
    if (answer) return answer;
    const waited = Math.round(this.#clock() - probe.sent);
    return { ok: false, reason: "busy", message: `a write has waited ${waited} ms for the database (another connection may hold its write lock); writes wait up to their timeout, then fail with nothing written` };
  }

  async #probed(driver: Driver): Promise<Health> {
    try {
      await driver.run(PROBE);
      return { ok: true };
    } catch (error) {
      if (error instanceof StorageUnavailable) return unhealthy(error);
      throw error;
    } finally {
      this.#probe = undefined;
    }
  }

  /** What health is without a probe: corrupt, stuck, a failure still held; or undefined. */
  #decided(): Health | undefined {
    if (this.#corrupt) return unhealthy(this.#corrupt);
    const now = this.#clock();
    let oldest = now;
    for (const started of this.#writing.values()) oldest = Math.min(oldest, started);
    if (now - oldest > this.#stuckAfterMs) {
      const message = `a write has waited ${Math.round(now - oldest)} ms for the database, more than ${this.#stuckAfterMs} ms: writes are stuck`;
      this.#report("stuck", message);
      return { ok: false, reason: "stuck", message };
    }
    if (this.#failure && now - this.#failure.at < this.#holdMs) return unhealthy(this.#failure.error);
    return undefined;
  }

  #failed(error: StorageUnavailable): void {
    if (error.reason === "corrupt") this.#corrupt ??= error;
    this.#failure = { error, at: this.#clock() };
    this.#report(error.reason, `${error.message} (${causeOf(error)})`);
  }

  #succeeded(): void {
    this.#failure = undefined;
    if (this.#reported === undefined || this.#corrupt) return;
    this.#log(`fencelease: writes succeed again (they were failing: ${this.#reported})`);
    this.#reported = undefined;
  }

  #report(reason: HealthReason, message: string): void {
    if (this.#reported === reason || reason === "closed") return; // closing is the store's owner's doing: nothing to tell
    this.#reported = reason;
    this.#log(`fencelease: writes are failing (${reason}): ${message}`);
  }
}

function unhealthy(error: StorageUnavailable): Health {
  return { ok: false, reason: error.reason, message: error.message, outcome: error.outcome };
}

/** The words of the error under a StorageUnavailable, for the log. */
function causeOf(error: StorageUnavailable): string {
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  return [cause?.code, cause?.message].filter((part) => typeof part === "string" && part !== "").join(": ") || String(cause);
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 1) throw new RangeError(`${name} must be a positive number of milliseconds, got ${value}`);
  return value;
}
