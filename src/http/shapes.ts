import { z } from "@hono/zod-openapi";
import { STATUSES } from "../store/sql/lease.ts";
import { hasUnprintable, UNPRINTABLE_CLASS } from "../store/printable.ts";
import { MAX_JSON_DEPTH } from "../json/depth.ts";
import { utf8Bytes } from "../store/validate.ts";

// The shapes every resource of the API shares: the limits, the rules of its
// fields (ids, owners, queues, fences, lease lengths), the job, the lease and
// the error as answers show them. Each resource's own shapes sit beside its
// routes (jobs.ts, leases.ts, queues.ts, schedules.ts); the same schemas
// validate every request, generate the OpenAPI document and type the client.

/** What the operator may tune; the defaults suit most deployments. */
export type Limits = {
  /** The largest request body accepted, in bytes; default 1 MiB. */
  maxBodyBytes: number;
  /** The longest lease a claim or renew may ask for, in ms; default 1 hour. */
  maxTtlMs: number;
};

/** Limits as createApp takes them: each one left out (or undefined) is its default. */
export type GivenLimits = { [Name in keyof Limits]?: Limits[Name] | undefined };

/** The limits used where none are given. */
export const DEFAULT_LIMITS: Limits = { maxBodyBytes: 1024 * 1024, maxTtlMs: 60 * 60 * 1000 };

// Messages name no field: the validation hook puts the field's path before each.

/** The most bytes of UTF-8 an id, an owner or a queue name may take. */
const MAX_LABEL_BYTES = 255;

/** The rules of label(), for the OpenAPI document: what a pattern and maxLength cannot say is in words. */
export const LABEL_RULES = labelRules(MAX_LABEL_BYTES);

/** The rules of label() in words, for a label of at most `maxBytes` bytes. */
export function labelRules(maxBytes: number): string {
  return (
    `1 to ${maxBytes} bytes of UTF-8 (maxLength counts characters, and a character may take up to 4 bytes), ` +
    'well-formed (no lone surrogate), with no control character (U+0000 to U+001F, U+007F to U+009F), line or paragraph separator, ' +
    'or bidirectional mark or override; not "." or ".."'
  );
}

/** What a JSON Schema pattern can say of label(): none of the characters it refuses (nor these others), and not "." or "..". */
export function labelPattern(alsoRefused = ""): string {
  return `^(?!\\.\\.?$)[^${UNPRINTABLE_CLASS.slice(1, -1)}${alsoRefused}]+$`;
}

/** How many characters JSON Schema's maxLength counts in `text`: code points, a surrogate pair as one. */
function codePoints(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    if ((text.charCodeAt(i) & 0xfc00) === 0xd800 && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      count--;
      i++;
    }
  }
  return count;
}

/** A string of at most `max` characters, counted as the OpenAPI document's maxLength counts them (code points, where zod's max counts UTF-16 units). */
export function textOfAtMost(max: number) {
  return z
    .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
    .refine((value) => codePoints(value) <= max, { error: `must be at most ${max} characters` })
    .openapi({ maxLength: max });
}

/** A JSON Schema pattern of printable text (none of the characters label() refuses), whose start has `shape`. */
export function printablePattern(shape: string): string {
  return `^(?=[^${UNPRINTABLE_CLASS.slice(1, -1)}]+$)${shape}`;
}

/** A non-empty string of at most 255 bytes of UTF-8, well-formed and printable: what label() takes, "." and ".." included. */
function printableText() {
  return z
    .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
    .min(1, { error: "must not be empty" })
    .refine((value) => utf8Bytes(value) <= MAX_LABEL_BYTES, { error: `must be at most ${MAX_LABEL_BYTES} bytes of UTF-8` })
    // A NUL would be cut off by SQLite, and a lone surrogate would become U+FFFD.
    .refine((value) => !value.includes("\u0000") && value.isWellFormed(), { error: "must be well-formed text without NUL characters" })
    // Control characters would reach logs and terminals; ids, owners, queues and keys never need them.
    .refine((value) => !hasUnprintable(value), { error: "must not contain control characters (U+0000 to U+001F, U+007F to U+009F) or bidirectional overrides" });
}

/** A non-empty string of at most 255 bytes of UTF-8: an id, an owner, a queue name. */
export function label() {
  return printableText()
    // "." or ".." would be rewritten by every URL parser on the way to /v1/jobs/:id.
    .refine((value) => value !== "." && value !== "..", { error: 'must not be "." or ".."' })
    .openapi({ maxLength: MAX_LABEL_BYTES, pattern: labelPattern(), description: LABEL_RULES });
}

/** Any JSON value, required: a field an answer always has (null at the least), or a request's that must be given. */
export function anyJson() {
  // Typed boolean: inferred as a type guard, it would narrow the value's type to `{} | null`.
  return z.unknown().refine((value): boolean => value !== undefined, { error: "is required: any JSON value" });
}

/**
 * What the OpenAPI document says of a JSON value a request sends, beside
 * `description`: how deep it may nest (src/json/depth.ts), in words and
 * as `x-maxDepth`, which JSON Schema has no keyword for.
 */
export function jsonValueRules(description: string) {
  return {
    description: `${description}. At most ${MAX_JSON_DEPTH} levels of arrays and objects deep ([[1]] is 2): a value deeper is refused, naming its field`,
    "x-maxDepth": MAX_JSON_DEPTH,
  };
}

/** A safe integer, negative included. */
export function integer() {
  return z
    .number({ error: (issue) => (issue.input === undefined ? "is required" : "must be a number") })
    .int({ error: "must be a whole number" })
    .min(Number.MIN_SAFE_INTEGER, { error: "must be a safe integer" })
    .max(Number.MAX_SAFE_INTEGER, { error: "must be a safe integer" });
}

/** A safe integer of 1 to `max`. */
export function positive(max = Number.MAX_SAFE_INTEGER) {
  return integer().min(1, { error: "must be at least 1" }).max(max, { error: `must be at most ${max}` });
}

/** A point in time: milliseconds since the epoch, not negative. */
export function instant() {
  return integer().min(0, { error: "must be milliseconds since the epoch, not negative" });
}

/** A JSON object body that refuses fields it does not know, and says which ones it knows. */
export function body<T extends Record<string, z.ZodType>>(shape: T) {
  const known = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `unknown field ${issue.keys.map((key) => JSON.stringify(key)).join(", ")}; the fields are ${known}`
        : issue.input === null || typeof issue.input !== "object" || Array.isArray(issue.input)
          ? "the body must be a JSON object"
          : undefined,
  });
}

/** Printable text of 1 to MAX_LABEL_BYTES bytes that is never in a path, so "." and ".." are keys like any other (as the store takes them); `what` opens its description. */
function keyText(example: string, what: string) {
  return printableText().openapi({
    example,
    maxLength: MAX_LABEL_BYTES,
    pattern: `^[^${UNPRINTABLE_CLASS.slice(1, -1)}]+$`,
    description: `${what}: 1 to ${MAX_LABEL_BYTES} bytes of UTF-8 (maxLength counts characters), well-formed, with no control character, line or paragraph separator, or bidirectional mark or override`,
  });
}

/** A job's key: what its queue's per-key settings limit it by. */
export const Key = keyText("tenant-42", "What the queue's per-key settings limit the job by (a tenant, a user, an API key; docs/queues.md#keys)");
/** A job's dedup key (docs/queues.md#once-per-key). */
export const DedupKey = keyText("order-7", "Enqueue at most once per this key of the queue, in the way dedupTtlMs, debounceMs or supersede says (exactly one of them)");
/** A job's id. */
export const JobId = label().openapi({ example: "invoice-42", description: `A job's id: ${LABEL_RULES}` });
/** Who holds or asks for a lease. */
export const Owner = label().openapi({ example: "worker-a", description: `Who holds or asks for the lease: ${LABEL_RULES}` });
/** A queue's name. */
export const QueueName = label().openapi({ example: "default", description: `A queue's name: ${LABEL_RULES}` });
/** The fencing token a write names its lease by. */
export const Fence = positive().openapi({ example: 1, description: "The fencing token of the lease, 1 to 2^53 - 1" });
/** How long a lease lasts, up to the limits' maxTtlMs. */
export const Ttl = (limits: Limits) =>
  positive(limits.maxTtlMs).openapi({ example: 30_000, description: "How long the lease lasts, in ms" });

/** A job as the API shows it: `result` is the JSON value that completed it. */
export const JobSchema = z
  .object({
    id: z.string(),
    queue: z.string(),
    key: z.string().nullable().openapi({ description: "The key it was enqueued with (docs/queues.md#keys), or null" }),
    payload: anyJson().openapi({ description: "The JSON value it was enqueued with; null without one" }),
    priority: z.number().int(),
    runAt: z.number().int().openapi({ description: "When it is due (again), in ms since the epoch. A job due when it was enqueued (no delay) stays due whatever the server's clock reads later" }),
    owner: z.string().nullable().openapi({ description: "Who holds or last held its lease; null before the first claim and after an expiry" }),
    until: z.number().int().openapi({ description: "When its lease ends or ended, in ms since the epoch; 0 before the first claim" }),
    fence: z.number().int().openapi({ description: "The fence of its latest lease; 0 before the first claim. It only grows" }),
    result: anyJson().openapi({ description: "The JSON value that completed it; null until then" }),
    done: z.boolean(),
    status: z.enum(STATUSES),
    attempts: z.number().int(),
    maxAttempts: z.number().int(),
    lastError: z.string().nullable(),
    progress: anyJson().openapi({ description: "The JSON value a current lease last reported with a renew, or null; kept when the lease ends" }),
    traceparent: z.string().nullable().openapi({ description: "The W3C traceparent it was enqueued with (its producer's span), or null: a worker continues that trace" }),
    tracestate: z.string().nullable().openapi({ description: "The W3C tracestate that came with the traceparent, or null" }),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
    dedupKey: z.string().nullable().openapi({ description: "The dedup key it was enqueued with (docs/queues.md#once-per-key), or null" }),
    dedupUntil: z.number().int().nullable().openapi({ description: "When its dedup window ends (enqueued with dedupTtlMs), or null" }),
    supersededBy: z.string().nullable().openapi({ description: "The job whose enqueue with supersede cancelled this one, or null" }),
    steps: z
      .record(
        z.string(),
        z.object({
          result: anyJson().openapi({ description: "The JSON value the step recorded" }),
          fence: z.number().int().openapi({ description: "The fence of the lease that recorded it" }),
          at: z.number().int().openapi({ description: "When it was recorded, in ms since the epoch" }),
        }),
      )
      .openapi({ description: "The steps its handlers recorded (POST /v1/jobs/{id}/steps/{name}), by name; {} for none. A handler that holds a later lease skips each step found here" }),
  })
  .openapi("Job");

/** A lease as the API shows it: its fence, its end and its job. */
export const LeaseSchema = z
  .object({ fence: z.number().int(), until: z.number().int(), job: JobSchema })
  .openapi("Lease");

/** The body of every error answer. */
export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: "stale_lease" }),
      message: z.string(),
      details: z.record(z.string(), z.unknown()).optional(),
    }),
  })
  .openapi("Error");

/** The most jobs or leases one many-job call carries. */
export const MAX_MANY = 1_000;

/** A list of 1 to MAX_MANY entries in which no id comes twice. */
export function many<T extends z.ZodType<{ id: string }>>(entry: T, what: string) {
  return z
    .array(entry, { error: (issue) => (issue.input === undefined ? "is required" : `must be an array of ${what}`) })
    .min(1, { error: `must hold at least one of the ${what}` })
    .max(MAX_MANY, { error: `must hold at most ${MAX_MANY} ${what}; send the rest in another call` })
    .superRefine((entries, context) => {
      const seen = new Set<string>();
      entries.forEach((entry, i) => {
        if (seen.has(entry.id)) context.addIssue({ code: "custom", path: [i, "id"], message: `repeats the id ${JSON.stringify(entry.id)}; each id may come once` });
        seen.add(entry.id);
      });
    });
}


/** The longest a request may wait: for a job (claim-next) or for a result (a job's read). */
export const MAX_WAIT_MS = 30_000;

/** A number sent as a query parameter. */
export const queryInt = (max: number) =>
  z.string().regex(/^\d+$/, { error: "must be a whole number" }).transform(Number).pipe(z.number().min(1, { error: "must be at least 1" }).max(max, { error: `must be at most ${max}` }))
    .openapi({ type: "integer", minimum: 1, maximum: max });

/** A time sent as a query parameter. */
export const queryInstant = () =>
  z.string().regex(/^\d{1,16}$/, { error: "must be milliseconds since the epoch, a whole number" }).transform(Number)
    .pipe(z.number().max(Number.MAX_SAFE_INTEGER, { error: "must be a safe integer" }))
    .openapi({ type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

/** The query of a listing that refuses parameters it does not know. */
export function query<T extends Record<string, z.ZodType>>(shape: T) {
  const known = Object.keys(shape).join(", ");
  return z.strictObject(shape, { error: (issue) => (issue.code === "unrecognized_keys" ? `unknown query parameter ${issue.keys.map((key) => JSON.stringify(key)).join(", ")}; the parameters are ${known}` : undefined) });
}


/** How one lease of a many-lease call was refused: the code and details a single call would answer. */
export const LeaseErrorSchema = z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()).optional() });
