import { TOKEN_CACHE_MS } from "../store/token-cache.ts";
import type { TokenInfo } from "../store/tokens.ts";

/** A waiting call's token, as Revocations watches it: its id, and its secret to look it up again. */
export type WatchedToken = { id: string; secret: string };

/** One waiting call's watch: the signal it waits with, whether its token's revoke ended it, and `end` once it answers. */
export type Watch = { signal: AbortSignal; readonly revoked: boolean; end(): void };

/** Options of Revocations; each has a default. */
export type RevocationsOptions = {
  /** The most a revoke made by another process waits before the waiting calls here see it (they look every recheckMs / 2); default TOKEN_CACHE_MS (5 s). */
  recheckMs?: number;
};

/** How often, in a Worker, a waiting call looks whether a revoke made in its isolate has marked it. */
export const REVOKE_TICK_MS = 100;

/** How many tokens' last lookups are kept at most. */
const SEEN_TOKENS = 1_000;

/** How long, in a Worker, a revoke waits for the token's waiting calls in its isolate to see it. */
export const REVOKE_WAIT_MS = 1_000;

/**
 * Whether one request may settle another's promises here. A Worker's runtime
 * refuses to (a request whose wait another request's revoke aborted would
 * never wake), so there each waiting call ends itself, on its own timer.
 */
const ONE_CONTEXT = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent !== "Cloudflare-Workers";

/** Timers must not keep a Node process alive; Workers timers have no unref. */
function unref(timer: unknown): unknown {
  (timer as { unref?: () => void } | undefined)?.unref?.();
  return timer;
}

/** A watched call: its own controller, and whether a revoke here has marked it. */
type Watched = { controller: AbortController; marked: boolean };

/**
 * Revocations ends the waiting calls of a token once it is revoked (claim-next
 * with waitMs, a job's long poll): each waits with the signal of a Watch,
 * which aborts when its client goes or when its token is revoked. The wait
 * then stops and hands nothing out (src/wait/long-poll.ts gives back what a
 * claim took after the abort), and the app answers 401 (Permit.whileValid).
 *
 * What it guarantees:
 * - A revoke made through this process (`revoked`, which the revoke route
 *   awaits once the token is deleted) has ended the token's waiting calls
 *   here by the time it resolves: at once on Node; in a Worker isolate, where
 *   each call ends itself on its own timer (every REVOKE_TICK_MS), once each
 *   has (REVOKE_WAIT_MS at most). None of them is handed a job after that; a
 *   claim waiting in a Durable Object is cancelled there, and the object
 *   gives back what it took once the cancel reaches it.
 * - A revoke made elsewhere (another Node server on the same database, another
 *   Worker isolate) is seen by each waiting call here when it looks its token
 *   up again in the database: every recheckMs / 2, an answer shared by the
 *   token's calls here for that long, so it ends within `recheckMs` (5 s by
 *   default, the token cache's bound for new calls), at one lookup a token
 *   per recheckMs / 2, however many of its calls wait.
 *
 * Failure modes: a lookup that fails (the database unavailable) is dropped,
 * and the call waits on until the next one; a waiting call here may be handed
 * a job between a revoke made elsewhere and the lookup that sees it.
 */
export class Revocations {
  readonly #find: (secret: string) => Promise<TokenInfo | null>;
  readonly #recheckMs: number;
  readonly #watching = new Map<string, Set<Watched>>();
  /** The last lookup of each token, by id: when it was made, and whether it found the token. */
  readonly #seen = new Map<string, { at: number; there: boolean }>();

  /** `find` answers the token of a secret from the database itself (no cache), for the lookups of waiting calls. */
  constructor(find: (secret: string) => Promise<TokenInfo | null>, options: RevocationsOptions = {}) {
    this.#find = find;
    this.#recheckMs = options.recheckMs ?? TOKEN_CACHE_MS;
    if (!Number.isSafeInteger(this.#recheckMs) || this.#recheckMs < 1) throw new RangeError(`recheckMs must be a positive whole number of ms, got ${options.recheckMs}`);
  }

  /** How many calls wait with a watch now. */
  get watching(): number {
    let count = 0;
    for (const calls of this.#watching.values()) count += calls.size;
    return count;
  }

  /** watch starts watching a waiting call of `token`, which waits with `signal` (its client's); `end` it once the call answers. */
  watch(token: WatchedToken, signal: AbortSignal): Watch {
    const watched: Watched = { controller: new AbortController(), marked: false };
    const { controller } = watched;
    const stop = () => controller.abort(signal.reason);
    signal.addEventListener("abort", stop, { once: true });
    if (signal.aborted) stop();
    if (!this.#watching.has(token.id)) this.#watching.set(token.id, new Set());
    this.#watching.get(token.id)!.add(watched);
    const timers: unknown[] = [];
    // Its own timers, in its own request: the mark of a revoke made here (a Worker), and the lookups for those made elsewhere.
    if (!ONE_CONTEXT) timers.push(unref(setInterval(() => watched.marked && controller.abort(new TokenRevoked(token.id)), REVOKE_TICK_MS)));
    timers.push(
      unref(
        setInterval(async () => {
          if (!(await this.#stillThere(token))) controller.abort(new TokenRevoked(token.id));
        }, this.#recheckMs / 2),
      ),
    );
    return {
      signal: controller.signal,
      get revoked() {
        return controller.signal.aborted && controller.signal.reason instanceof TokenRevoked;
      },
      end: () => {
        for (const timer of timers) clearInterval(timer as ReturnType<typeof setInterval>);
        signal.removeEventListener("abort", stop);
        const calls = this.#watching.get(token.id);
        calls?.delete(watched);
        if (calls?.size === 0) this.#watching.delete(token.id);
      },
    };
  }

  /**
   * Whether `token` is still in the database, as a lookup made less than
   * recheckMs / 2 ago found it (one lookup a token, however many of its calls
   * wait; the answer is shared, never the lookup: a Worker's request may not
   * wait on another's I/O), else as it finds it now. A lookup that fails says yes.
   */
  async #stillThere(token: WatchedToken): Promise<boolean> {
    const seen = this.#seen.get(token.id);
    if (seen !== undefined && performance.now() - seen.at < this.#recheckMs / 2) return seen.there;
    // Taken by this lookup: the token's other calls keep the last answer meanwhile.
    const looking = { at: performance.now(), there: seen?.there ?? true };
    this.#seen.delete(token.id);
    this.#seen.set(token.id, looking);
    if (this.#seen.size > SEEN_TOKENS) this.#seen.delete(this.#seen.keys().next().value!);
    const found = await this.#find(token.secret).catch(() => undefined);
    if (found === undefined) return true;
    looking.there = found !== null && found.id === token.id;
    return looking.there;
  }

  /** revoked ends every waiting call of token `id` in this process, whose revoke has been made; resolves once they have ended. */
  async revoked(id: string): Promise<void> {
    const calls = [...(this.#watching.get(id) ?? [])];
    for (const call of calls) call.marked = true;
    if (ONE_CONTEXT) {
      for (const { controller } of calls) controller.abort(new TokenRevoked(id));
      return;
    }
    const until = performance.now() + REVOKE_WAIT_MS;
    while (calls.some(({ controller }) => !controller.signal.aborted) && performance.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, REVOKE_TICK_MS / 4));
    }
  }
}

/** The reason a watch's signal aborts with when its token was revoked. */
export class TokenRevoked extends Error {
  constructor(id: string) {
    super(`token ${id} was revoked`);
    this.name = "TokenRevoked";
  }
}
