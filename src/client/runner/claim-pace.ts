import { type LeaseClient, MAX_WAIT_MS } from "../lease-client.ts";
import type { ClaimNextAnswer, Lease } from "../types.ts";

// How a client asks again after a claim-next that came back short, so that a
// rate-limited queue is never hammered: the server says when its next token
// is due (`retryAfterMs`), and nobody asks before.

/** The longest a runner waits on its own for a rate limit's next token before it asks again: the server's longest long poll. */
const MAX_PAUSE_MS = MAX_WAIT_MS;

/**
 * ClaimPace decides how a worker runner's next claim goes once one came back
 * short (fewer jobs than it had free slots):
 * - the queue's rate limit stopped it (`retryAfterMs`): after that many ms
 *   (at most 30 s), so the runner never asks before the next token is due;
 *   that claim long-polls if the runner long-polls at all;
 * - else a long poll at once, when `waitMs` > 0 and the last long poll was
 *   not cut short by the server (stopping, full);
 * - else a plain claim after `idleMs`.
 * A claim's `retryAfterMs` counts once: a later short `next` (of a complete
 * or fail, whose answer says nothing of tokens) goes by the last two rules,
 * and the server's long poll waits for the token.
 */
export class ClaimPace {
  #cutShort = false;
  #retryAfterMs: number | undefined;

  /** A claim-next sent with `waitMs` (0: none) was answered. */
  answered(answer: ClaimNextAnswer, waitMs: number): void {
    this.#cutShort = waitMs > 0 && answer.leases.length === 0 && (answer.waitedMs ?? 0) < waitMs;
    this.#retryAfterMs = answer.retryAfterMs;
  }

  /** How the next claim goes: a long poll or not, after how many ms, and whether that is when a rate limit's next token is due. */
  next(settings: { waitMs: number; idleMs: number }): { longPoll: boolean; afterMs: number; tokenDue: boolean } {
    const retryAfterMs = this.#retryAfterMs;
    this.#retryAfterMs = undefined;
    const longPoll = settings.waitMs > 0 && (retryAfterMs !== undefined || !this.#cutShort);
    if (retryAfterMs !== undefined) return { longPoll, afterMs: Math.min(retryAfterMs, MAX_PAUSE_MS), tokenDue: true };
    return { longPoll, afterMs: longPoll ? 0 : settings.idleMs, tokenDue: false };
  }
}

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", abort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", abort, { once: true });
  });
}

/**
 * claimOneWithin claims the next due job of `queue`, waiting up to `waitMs` in
 * all (0: not at all): the server long-polls, and a claim that the queue's
 * rate limit stopped is asked again when its next token is due, if that is
 * within `waitMs`. Answers the lease and how long after this call's start the
 * claim that took it was sent plus its server wait (where the lease began at
 * the earliest), or null when none came.
 */
export async function claimOneWithin<Payload = unknown>(client: LeaseClient, queue: string, request: { owner: string; ttlMs: number; waitMs?: number }, signal?: AbortSignal): Promise<{ lease: Lease<Payload>; waitedMs: number } | null> {
  const { owner, ttlMs, waitMs = 0 } = request;
  const started = Date.now();
  for (;;) {
    const sentAfter = Date.now() - started;
    const left = Math.max(0, waitMs - sentAfter);
    const answer = await client.claimNextAnswer<Payload>(queue, { owner, ttlMs, limit: 1, waitMs: left || undefined }, { signal });
    const [lease] = answer.leases;
    if (lease) return { lease, waitedMs: sentAfter + (answer.waitedMs ?? 0) };
    const { retryAfterMs } = answer;
    if (retryAfterMs === undefined || Date.now() - started + retryAfterMs > waitMs) return null;
    await pause(retryAfterMs, signal);
  }
}
