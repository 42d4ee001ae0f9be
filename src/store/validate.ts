import { InvalidArgument } from "./errors.ts";
import { hasUnprintable } from "./printable.ts";
import { MAX_TRACESTATE, normalTraceparent, traceparentFault, tracestateFault } from "../tracing/trace-context.ts";
import { PUSH_OWNER } from "./sql/claim-next.ts";
import { MAX_JSON_DEPTH, textNestsDeeper, valueNestsDeeper } from "../json/depth.ts";

// Every store verb checks its arguments here, before the database is touched,
// so a bad call can never leave a half-written trace.

/** A refused value as a message shows it: a string quoted, so that "2" and 2 read apart; anything else as String gives it. */
export function describe(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

function isSafeInteger(value: unknown): value is number {
  return Number.isSafeInteger(value);
}

/** A positive safe integer: a ttl, a fence, a limit. */
export function positiveInt(name: string, value: unknown): number {
  if (isSafeInteger(value) && value > 0) return value;
  throw new InvalidArgument(`${name} must be a positive safe integer, got ${describe(value)}`);
}

/** A point in time: integer milliseconds since the epoch, never negative. */
export function instant(name: string, value: unknown): number {
  if (isSafeInteger(value) && value >= 0) return value;
  throw new InvalidArgument(`${name} must be integer milliseconds since the epoch, got ${describe(value)}`);
}

/** A length of time: whole milliseconds, 0 or more (a delay). */
export function duration(name: string, value: unknown): number {
  if (isSafeInteger(value) && value >= 0) return value;
  throw new InvalidArgument(`${name} must be a whole number of milliseconds, 0 or more, got ${describe(value)}`);
}

/** Any safe integer, negative included (a priority). */
export function integer(name: string, value: unknown): number {
  if (isSafeInteger(value)) return value;
  throw new InvalidArgument(`${name} must be a safe integer, got ${describe(value)}`);
}

/** A non-empty string that SQLite stores as it is given and a log prints on one line (no control character, no lone surrogate): an id, an owner, a queue name. */
export function name(what: string, value: unknown): string {
  if (typeof value === "string" && value.length > 0 && value.isWellFormed() && !hasUnprintable(value)) return value;
  throw new InvalidArgument(`${what} must be a non-empty string of printable text, got ${describe(value)}`);
}

/**
 * An owner that takes new leases (a claim, claim-next, the `next` of a
 * complete or fail): a name (see `name`), but not PUSH_OWNER. Push delivery's
 * leases are counted against the queue's maxInFlight by that owner, and only
 * the server delivers them; a client that took one would hold a slot that
 * nothing delivers. The endpoint still renews, completes and fails the lease
 * it was given with it: those take no new lease.
 */
export function claimant(what: string, value: unknown): string {
  const owner = name(what, value);
  if (owner === PUSH_OWNER) {
    throw new InvalidArgument(`${what} ${JSON.stringify(owner)} is the server's own, for the leases of push delivery: an endpoint ends the lease it was given with it, but no client takes a lease with it (a claim, or the next of a complete or fail); name another ${what}`);
  }
  return owner;
}

/**
 * The ids a schedule's fires take: `{name}@{fire time}`, the time as
 * Date.prototype.toISOString writes it (src/store/schedule-times.ts), a name
 * without "@".
 */
function fireOf(id: string): RegExpExecArray | null {
  return /^([^@]+)@((?:[+-]\d{6}|\d{4})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)$/.exec(id);
}

/**
 * A job id a client may enqueue: a name (see `name`) that does not have the
 * shape of a schedule's fire. A fire enqueues nothing when its id is taken,
 * so an id of that shape enqueued first would silently take the fire's place;
 * refused for any name, as a schedule of that name may be put later.
 */
export function jobId(what: string, value: unknown): string {
  const id = name(what, value);
  const fire = fireOf(id);
  if (fire) {
    throw new InvalidArgument(`${what} ${JSON.stringify(id)} has the shape of a schedule's fire ({name}@{ISO time}), which only the fires of schedule ${JSON.stringify(fire[1])} may take; give the job another id`);
  }
  return id;
}

/** The longest key, in bytes of UTF-8. */
export const MAX_KEY_BYTES = 255;

/** A job's key: absent or null for none, else a name (see `name`) of at most MAX_KEY_BYTES bytes of UTF-8. */
export function key(what: string, value: unknown): string | null {
  if (value === undefined || value === null) return null;
  const checked = name(what, value);
  const bytes = new TextEncoder().encode(checked).length;
  if (bytes > MAX_KEY_BYTES) throw new InvalidArgument(`${what} must be at most ${MAX_KEY_BYTES} bytes of UTF-8, got ${bytes}`);
  return checked;
}

/** The longest name of a step, in bytes of UTF-8. */
export const MAX_STEP_NAME_BYTES = 128;

/**
 * A step's name: a name (see `name`) of at most MAX_STEP_NAME_BYTES bytes of
 * UTF-8, and not "." or "..", which every URL parser would rewrite on the way
 * to /v1/jobs/:id/steps/:name.
 */
export function stepName(what: string, value: unknown): string {
  const checked = name(what, value);
  const bytes = utf8Bytes(checked);
  if (bytes > MAX_STEP_NAME_BYTES) throw new InvalidArgument(`${what} must be at most ${MAX_STEP_NAME_BYTES} bytes of UTF-8, got ${bytes}`);
  if (checked === "." || checked === "..") throw new InvalidArgument(`${what} must not be "." or ".."; name the step by what it does, e.g. "charge"`);
  return checked;
}

/** Ids each given once: a many-lease call answers each lease by its id, so an id sent twice could not be told apart. */
export function distinctIds(what: string, entries: { id: string }[]): void {
  const seen = new Set<string>();
  entries.forEach(({ id }, i) => {
    if (seen.has(id)) throw new InvalidArgument(`${what}[${i}].id repeats the id ${JSON.stringify(id)}; each id may come once`);
    seen.add(id);
  });
}

/** The most bytes of UTF-8 a job's progress may take as JSON text. */
export const MAX_PROGRESS_BYTES = 4096;

/** The most bytes of UTF-8 a cancel's reason may take. */
export const MAX_REASON_BYTES = 1024;

/**
 * How many bytes of UTF-8 `text` takes, as TextEncoder writes it (a lone
 * surrogate as U+FFFD, 3 bytes). Counted without encoding: every id, owner
 * and queue of a request is measured, and encoding each allocated.
 */
export function utf8Bytes(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) continue;
    if (unit < 0x800) bytes += 1;
    else if ((unit & 0xfc00) === 0xd800 && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 2; // a surrogate pair: 4 bytes for its 2 units
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/** A progress report: any JSON value of at most MAX_PROGRESS_BYTES as JSON text, returned as that text; undefined (none) as null. */
export function progress(what: string, value: unknown): string | null {
  const encoded = json(what, value);
  if (encoded !== null && utf8Bytes(encoded) > MAX_PROGRESS_BYTES) {
    throw new InvalidArgument(`${what} must be at most ${MAX_PROGRESS_BYTES} bytes as JSON, got ${utf8Bytes(encoded)}; keep the details elsewhere and report a summary`);
  }
  return encoded;
}

/** Any string, the empty one included. */
export function text(what: string, value: unknown): string {
  if (typeof value === "string") return value;
  throw new InvalidArgument(`${what} must be a string, got ${describe(value)}`);
}

/** The refusal of a JSON value that nests deeper than MAX_JSON_DEPTH. */
function tooDeep(what: string): InvalidArgument {
  return new InvalidArgument(`${what} must nest at most ${MAX_JSON_DEPTH} levels of arrays and objects; flatten it, or send its deep part as a string`);
}

/** A result as stored: any text, the empty one included; but JSON text no deeper than MAX_JSON_DEPTH (text that is not JSON is shown as a string, at any depth). */
export function result(what: string, value: unknown): string {
  const given = text(what, value);
  if (textNestsDeeper(given) && isJson(given)) throw tooDeep(what);
  return given;
}

function isJson(given: string): boolean {
  try {
    JSON.parse(given);
    return true;
  } catch {
    return false;
  }
}

/** Whether JSON.stringify meets NaN or ±Infinity in `value`, at any depth (it writes them as null). */
function hasNonFinite(value: unknown): boolean {
  let found = false;
  JSON.stringify(value, (_key, inner: unknown) => {
    if (typeof inner === "number" && !Number.isFinite(inner)) found = true;
    return inner;
  });
  return found;
}

/** Text of at most `maxBytes` bytes of UTF-8 (a cancel's reason); undefined or null as null. */
export function shortText(what: string, value: unknown, maxBytes: number): string | null {
  if (value === undefined || value === null) return null;
  const given = text(what, value);
  if (utf8Bytes(given) > maxBytes) throw new InvalidArgument(`${what} must be at most ${maxBytes} bytes of UTF-8, got ${utf8Bytes(given)}`);
  return given;
}

/** A value that JSON can carry, nested at most MAX_JSON_DEPTH levels, returned as its JSON text. */
export function json(what: string, value: unknown): string | null {
  if (value === undefined) return null;
  // Before JSON.stringify, which recurses: deep enough, it would overflow the stack.
  if (valueNestsDeeper(value)) throw tooDeep(what);
  let encoded: string | undefined;
  try {
    encoded = JSON.stringify(value);
  } catch (error) {
    throw new InvalidArgument(`${what} must be a JSON value: ${(error as Error).message}`);
  }
  if (encoded === undefined) throw new InvalidArgument(`${what} must be a JSON value, got ${describe(value)}`);
  // JSON.stringify writes NaN and ±Infinity as null: refuse rather than change the value.
  if (/\bnull\b/.test(encoded) && hasNonFinite(value)) throw new InvalidArgument(`${what} must not hold NaN or Infinity, which JSON cannot carry`);
  return encoded;
}

/**
 * A job's W3C trace context (src/tracing/trace-context.ts): a traceparent as
 * the spec writes it (stored as version 00), and a tracestate only with one.
 * Both absent (undefined or null) is none. A field given is the caller's own
 * word, so a bad one is refused, not dropped as a bad header is.
 */
export function traceContext(what: string, traceparent: unknown, tracestate: unknown): { traceparent: string | null; tracestate: string | null } {
  const none = (value: unknown) => value === undefined || value === null;
  if (none(traceparent)) {
    if (none(tracestate)) return { traceparent: null, tracestate: null };
    throw new InvalidArgument(`${what}tracestate needs a traceparent: the spec gives a tracestate no meaning without one`);
  }
  if (typeof traceparent !== "string") throw new InvalidArgument(`${what}traceparent must be a string, got ${describe(traceparent)}`);
  const fault = traceparentFault(traceparent);
  if (fault !== null) throw new InvalidArgument(`${what}traceparent ${fault} (W3C Trace Context, e.g. "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), got ${describe(traceparent.slice(0, 80))}`);
  if (none(tracestate) || tracestate === "") return { traceparent: normalTraceparent(traceparent), tracestate: null };
  if (typeof tracestate !== "string") throw new InvalidArgument(`${what}tracestate must be a string, got ${describe(tracestate)}`);
  const stateFault = tracestateFault(tracestate);
  if (stateFault !== null) throw new InvalidArgument(`${what}tracestate ${stateFault} (W3C Trace Context: at most 32 key=value members, ${MAX_TRACESTATE} characters here)`);
  return { traceparent: normalTraceparent(traceparent), tracestate };
}
