// The API's field names and the CLI's options for them: the server's 400s name
// fields (`waitMs must be at most 30000`), and a person at the command line
// typed options (`--wait 40000`), so the CLI says the option back.

/** Each field the server may name, with the option that sets it. Positionals (id, queue, name) are left out: they have no option. */
export const FLAG_OF_FIELD: Record<string, string> = {
  waitMs: "wait",
  ttlMs: "ttl-ms",
  limit: "limit",
  owner: "owner",
  fence: "fence",
  priority: "priority",
  runAt: "run-at",
  delayMs: "delay-ms",
  maxAttempts: "max-attempts",
  payload: "payload",
  result: "result",
  error: "error",
  retryInMs: "retry-in-ms",
  progress: "progress",
  maxLeased: "max-leased",
  ratePerSecond: "rate",
  burst: "burst",
  key: "key",
  dedupKey: "dedup-key",
  dedupTtlMs: "dedup-ttl-ms",
  debounceMs: "debounce-ms",
  debounceMaxMs: "debounce-max-ms",
  supersede: "supersede",
  maxLeasedPerKey: "max-leased-per-key",
  keyRatePerSecond: "key-rate",
  keyBurst: "key-burst",
  orderedByKey: "ordered-by-key",
  fairByKey: "fair-by-key",
  cron: "cron",
  timezone: "tz",
  everyMs: "every-ms",
  reason: "reason",
  by: "by",
  status: "status",
  cursor: "cursor",
};

const CAMEL = Object.keys(FLAG_OF_FIELD).filter((field) => /[A-Z]/.test(field));
const PLAIN = Object.keys(FLAG_OF_FIELD).filter((field) => !/[A-Z]/.test(field));

/**
 * A server's message in the CLI's terms: a camelCase field anywhere, and a
 * plain-word field where it opens one of the message's `; `-separated issues,
 * become their options. A field inside a path (`jobs.0.maxAttempts`, a line of
 * enqueue-many's input) stays: there it names what the input holds.
 */
export function inFlagTerms(message: string): string {
  return message
    .replace(new RegExp(`(?<![\\w.])(${CAMEL.join("|")})\\b`, "g"), (field) => `--${FLAG_OF_FIELD[field]}`)
    .replace(new RegExp(`(^|; )(${PLAIN.join("|")}) `, "g"), (_, start: string, field: string) => `${start}--${FLAG_OF_FIELD[field]} `);
}
