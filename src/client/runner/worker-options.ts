import { MAX_WAIT_MS } from "../lease-client.ts";
import type { HeldLease } from "../with-lease.ts";

// What a worker runner is given: its options, checked once when it is built,
// and its handler. Both runWorker (the public face) and WorkerRunner (the
// moving parts) read them from here, so neither imports the other's types.

/** The most leases one renewMany or completeMany carries (the server's limit), and so the most jobs in hand. */
export const MAX_MANY = 1_000;

/**
 * The work done for one job: what it resolves to is stored as the job's
 * result (undefined as null). `Payload` is what the jobs' payloads hold and
 * `Result` what it answers, default unknown: the caller's word, not checked.
 */
export type JobHandler<Payload = unknown, Result = unknown> = (held: HeldLease<Payload>) => Promise<Result>;

/** What a worker runner takes jobs from, and how; checked once, when the runner is built. */
export type WorkerOptions = {
  /** The queue to take jobs from. */
  queue: string;
  /** Who holds the leases; one name per runner. */
  owner: string;
  /** How many jobs are in hand at most (1 to 1,000): handlers running, and results on their way. */
  concurrency: number;
  /** How long each lease lasts, in ms. */
  ttlMs: number;
  /** How often to renew all the leases in hand, in one call; default a third of the ttl. */
  renewEveryMs?: number | undefined;
  /**
   * While the queue has no due job, a claim waits up to this many ms on the
   * server for one (a long poll; 0 to 30,000); default 30 s, so an idle
   * runner sends about 2 requests a minute. 0: ask again after `idleMs` instead.
   */
  waitMs?: number | undefined;
  /** With `waitMs` 0, how long to wait before asking again when the queue had no due job; also the pause after a long poll the server cut short (stopping, or full). Default 1 s. */
  idleMs?: number | undefined;
  /** When a handler throws, the job is due again this many ms later; default the server's backoff. */
  retryInMs?: number | undefined;
  /** Abort to stop, as `stop()` does. */
  signal?: AbortSignal | undefined;
  /**
   * Where the runner's own errors go (an unreachable server, a lost lease, a
   * refused token), each with one line that says what failed and what the
   * runner does next: when it asks again, or that it stopped (a 401 or a 403
   * stops it). Default: console.error of that line.
   */
  onError?: ((error: unknown, line: string) => void) | undefined;
};

/** The longest retryInMs the server takes: a year (FailBody in src/http/leases.ts). */
const MAX_RETRY_IN_MS = 365 * 24 * 60 * 60 * 1000;

/** The options with every default filled in. */
export type Settings = Required<Omit<WorkerOptions, "signal" | "retryInMs">> & Pick<WorkerOptions, "signal" | "retryInMs">;

/** Checks the options once, with a message that says what is wrong, and fills in the defaults. */
export function workerSettings(options: WorkerOptions): Settings {
  const wholeMs = (name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER) => {
    if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) {
      throw new RangeError(`runWorker: ${name} must be a whole number from ${min} to ${max}, got ${String(value)}`);
    }
  };
  if (typeof options !== "object" || options === null) throw new TypeError("runWorker: options must be an object");
  for (const name of ["queue", "owner"] as const) {
    if (typeof options[name] !== "string" || options[name] === "") throw new RangeError(`runWorker: ${name} must be a non-empty string, got ${JSON.stringify(options[name])}`);
  }
  wholeMs("concurrency", options.concurrency, 1, MAX_MANY);
  wholeMs("ttlMs", options.ttlMs, 1);
  const renewEveryMs = options.renewEveryMs ?? Math.max(1, Math.floor(options.ttlMs / 3));
  wholeMs("renewEveryMs", renewEveryMs, 1, options.ttlMs - 1 || 1);
  const idleMs = options.idleMs ?? 1_000;
  wholeMs("idleMs", idleMs, 1);
  const waitMs = options.waitMs ?? MAX_WAIT_MS;
  wholeMs("waitMs", waitMs, 0, MAX_WAIT_MS);
  if (options.retryInMs !== undefined) wholeMs("retryInMs", options.retryInMs, 0, MAX_RETRY_IN_MS);
  if (options.onError !== undefined && typeof options.onError !== "function") throw new TypeError("runWorker: onError must be a function");
  return { ...options, renewEveryMs, idleMs, waitMs, onError: options.onError ?? ((_error, line) => console.error(line)) };
}
