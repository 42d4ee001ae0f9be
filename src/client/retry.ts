/** How the client retries a call that could not be served; every field has a default. */
export type RetryOptions = {
  /** Retries after the first attempt; default 4. */
  retries?: number | undefined;
  /** The first backoff; it doubles each time; default 100 ms. */
  baseDelayMs?: number | undefined;
  /** No backoff, and no Retry-After, waits longer than this; default 5000 ms. */
  maxDelayMs?: number | undefined;
  /** How to wait; tests give one that records the delay instead. */
  sleep?: ((ms: number) => Promise<void>) | undefined;
  /** A number in [0, 1) for the jitter; default Math.random. */
  random?: (() => number) | undefined;
};

/** The retry options with every default filled in. */
export type RetryPolicy = Required<RetryOptions>;

/** The policy for the given options. */
export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  return {
    retries: options.retries ?? 4,
    baseDelayMs: options.baseDelayMs ?? 100,
    maxDelayMs: options.maxDelayMs ?? 5_000,
    sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    random: options.random ?? Math.random,
  };
}

/**
 * The wait before retry number `attempt` (0 for the first retry): the server's
 * Retry-After when it gave one, else a capped exponential backoff with full
 * jitter, so that many clients do not come back at the same instant.
 */
export function delayBefore(attempt: number, policy: RetryPolicy, retryAfter: string | null): number {
  const seconds = retryAfter === null ? Number.NaN : Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, policy.maxDelayMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.round(policy.random() * ceiling);
}

// Connection errors that prove the request never reached the server, so even
// a call that must not run twice (a claim) can be sent again.
const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ENETUNREACH", "EHOSTUNREACH"]);

/** Whether a fetch failure proves that the request was never sent. */
export function neverSent(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string; errors?: { code?: string }[] } })?.cause;
  const codes = [cause?.code, ...(cause?.errors ?? []).map((inner) => inner.code)];
  return codes.some((code) => code !== undefined && NOT_SENT.has(code));
}
