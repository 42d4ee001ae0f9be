import { errorFromResponse, LeaseLostError, type NotFoundError } from "./errors.ts";
import type { LeaseClient } from "./lease-client.ts";
import { checkedProgress, PendingProgress } from "./progress.ts";

/** Why a kept lease was lost: a renew refused it (stale_lease, not_found), or it ran out before one got through. */
export type LostLease = LeaseLostError | NotFoundError;

/** The error of a lease that ran out before a renew got through. */
export function expiredError(id: string, fence: number): LeaseLostError {
  const message = `the lease on job ${JSON.stringify(id)} expired before it could be renewed`;
  return new LeaseLostError(409, "stale_lease", message, { reason: "expired", currentFence: fence });
}

/** What a LeaseKeeper renews, and whom it tells. */
export type LeaseKeeperOptions = {
  client: LeaseClient;
  owner: string;
  ttlMs: number;
  everyMs: number;
  /** A lease is gone: it is no longer kept, and must not be written with. */
  onLost: (id: string, fence: number, error: LostLease) => void;
  /** A renewMany ended: the leases it carried may be written with again. */
  onSettled: () => void;
  /** A renewMany that did not get through (the deadlines decide what that costs). */
  onError: (error: unknown) => void;
};

/** One lease kept alive: `sentAt` is when its claim, or the last renew that got through, was sent; `progress`, what its next renew reports. */
type Kept = { fence: number; sentAt: number; settling: boolean; progress: PendingProgress };

/**
 * LeaseKeeper keeps every lease of one owner alive with ONE renewMany call
 * every `everyMs` (not a timer per lease), and loses a lease, through
 * `onLost`, as soon as a renew is refused or when it would expire before any
 * renew got through: each lease's deadline is measured on this process's clock
 * from when its claim or its last successful renew was SENT, so a server clock
 * ahead or behind cannot stretch it. At most one renewMany is in flight; the
 * next is sent `everyMs` after it ends.
 *
 * Each renew carries the latest progress reported for its lease since the
 * last renew that got through (`progress`); a lease no longer kept reports
 * nothing, so a lost lease's progress is never sent.
 *
 * A lease being written (`settling`: its complete or fail is on its way) is
 * neither renewed nor lost by its deadline: the write's answer decides. And
 * `renewing(id)` tells the caller to hold such a write back until the renew in
 * flight has ended, so that a renew never reaches the server after the write
 * that ended its lease (it would be refused, and recorded as a stale write).
 */
export class LeaseKeeper {
  readonly #options: LeaseKeeperOptions;
  readonly #kept = new Map<string, Kept>();
  #inFlight: { ids: Set<string>; done: Promise<void> } | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #deadline: { at: number; timer: ReturnType<typeof setTimeout> } | undefined;
  #stopped = false;

  constructor(options: LeaseKeeperOptions) {
    this.#options = options;
    this.#schedule();
  }

  /** Keeps a lease whose claim was sent at `sentAt`. */
  keep(id: string, fence: number, sentAt: number): void {
    this.#kept.set(id, { fence, sentAt, settling: false, progress: new PendingProgress() });
    this.#armDeadline(sentAt + this.#options.ttlMs);
  }

  /** Stops keeping a lease (it ended); a later answer about it is ignored. */
  drop(id: string, fence: number): void {
    if (this.#kept.get(id)?.fence === fence) this.#kept.delete(id);
  }

  /** Marks a lease as being written (not renewed, no deadline), or, with `false`, kept as before. */
  settling(id: string, fence: number, settling: boolean): void {
    const kept = this.#kept.get(id);
    if (kept?.fence !== fence) return;
    kept.settling = settling;
    if (!settling) this.#armDeadline(kept.sentAt + this.#options.ttlMs);
  }

  /** Reports `value` with the lease's next renew; checked at once (see PendingProgress), and dropped if the lease is no longer kept. */
  progress(id: string, fence: number, value: unknown): void {
    const kept = this.#kept.get(id);
    if (kept?.fence === fence) kept.progress.report(value);
    else checkedProgress(value); // a value the server would refuse throws all the same
  }

  /** Whether the renew in flight carries this lease. */
  renewing(id: string): boolean {
    return this.#inFlight?.ids.has(id) ?? false;
  }

  /** Whether a lease is past its deadline (a settling one too: the caller asks before writing with it again). */
  overdue(id: string, fence: number): boolean {
    const kept = this.#kept.get(id);
    return kept?.fence === fence && Date.now() >= kept.sentAt + this.#options.ttlMs;
  }

  /** Waits for the renew in flight, if any, to end. */
  async settled(): Promise<void> {
    await this.#inFlight?.done;
  }

  /** Stops renewing and waits for the renew in flight, if any. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#deadline?.timer);
    this.#deadline = undefined;
    await this.#inFlight?.done;
  }

  #schedule(): void {
    if (!this.#stopped) this.#timer = setTimeout(() => void this.#renew(), this.#options.everyMs);
  }

  async #renew(): Promise<void> {
    const { client, owner, ttlMs } = this.#options;
    const leases = [...this.#kept].filter(([, kept]) => !kept.settling).map(([id, kept]) => ({ id, fence: kept.fence, ...kept.progress.take() }));
    if (leases.length === 0) return this.#schedule();
    const sentAt = Date.now();
    const request = client.renewMany({ owner, ttlMs, leases });
    this.#inFlight = { ids: new Set(leases.map((lease) => lease.id)), done: request.then(() => undefined, () => undefined) };
    try {
      const answers = await request;
      answers.forEach((answer, i) => {
        const { id, fence } = leases[i]!;
        const kept = this.#kept.get(id);
        if (kept?.fence !== fence) return; // dropped or lost while the renew was on its way
        if ("until" in answer) kept.sentAt = sentAt;
        else this.#lose(id, fence, errorFromResponse(answer.error.code === "not_found" ? 404 : 409, { error: answer.error }) as LostLease);
      });
    } catch (error) {
      // Unreachable or unavailable: the next tick tries again, with the progress this one carried, and the deadlines say when a lease is gone.
      for (const { id, fence, ...report } of leases) {
        const kept = this.#kept.get(id);
        if (kept?.fence === fence) kept.progress.putBack(report);
      }
      if (!this.#stopped) this.#options.onError(error);
    }
    this.#inFlight = undefined;
    if (this.#stopped) return;
    this.#armDeadline(Number.POSITIVE_INFINITY); // re-arms only if the timer is gone
    this.#options.onSettled();
    this.#schedule();
  }

  /** Makes sure the deadline timer fires no later than `at`. */
  #armDeadline(at: number): void {
    if (this.#stopped || (this.#deadline !== undefined && this.#deadline.at <= at)) return;
    if (at === Number.POSITIVE_INFINITY) {
      at = this.#earliestDeadline();
      if (at === Number.POSITIVE_INFINITY) return;
    }
    clearTimeout(this.#deadline?.timer);
    const timer = setTimeout(() => this.#expire(), Math.max(0, at - Date.now()));
    this.#deadline = { at, timer };
  }

  /** Loses every lease whose deadline has passed, then waits for the next deadline. */
  #expire(): void {
    this.#deadline = undefined;
    const now = Date.now();
    for (const [id, kept] of this.#kept) {
      if (kept.settling || now < kept.sentAt + this.#options.ttlMs) continue;
      this.#lose(id, kept.fence, expiredError(id, kept.fence));
    }
    this.#armDeadline(Number.POSITIVE_INFINITY);
  }

  #earliestDeadline(): number {
    let earliest = Number.POSITIVE_INFINITY;
    for (const kept of this.#kept.values()) if (!kept.settling) earliest = Math.min(earliest, kept.sentAt + this.#options.ttlMs);
    return earliest;
  }

  #lose(id: string, fence: number, error: LostLease): void {
    this.#kept.delete(id);
    this.#options.onLost(id, fence, error);
  }
}
