import { createTraceState, type SpanContext } from "@opentelemetry/api";

// W3C Trace Context (https://www.w3.org/TR/trace-context/): the two texts a
// job carries from its producer to every worker that leases it. Parsed here
// once, for the store's checks, the server's headers and the client's spans.
//
// traceparent: version "-" trace-id "-" parent-id "-" trace-flags, lowercase
// hex. Version ff is invalid; a trace-id or parent-id of all zeros is invalid;
// version 00 is exactly 55 characters; a later version is read as 00 is, and
// may have more after a "-" at character 55 (the spec's rule for versions a
// reader does not know). It is stored as version 00, the one this code speaks.
//
// tracestate: up to 32 comma-separated key=value members (vendor data, opaque
// to us but for its grammar), at most MAX_TRACESTATE characters here.

/** The longest tracestate kept: the spec asks every hop to carry at least this many characters. */
export const MAX_TRACESTATE = 512;

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const KEY_SOURCE = String.raw`(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})`;
// 0x20 to 0x7e but "," and "=", not ending in a space.
const VALUE_SOURCE = String.raw`[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]`;
const KEY = new RegExp(`^${KEY_SOURCE}$`);
const VALUE = new RegExp(`^${VALUE_SOURCE}$`);

/** A traceparent's trace-id, parent-id and flags, after its version: neither id all zeros. */
const TRACE_IDS = String.raw`-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}`;

/**
 * traceparentFault's rules as one JSON Schema pattern, for the OpenAPI
 * document: version 00 of exactly 55 characters, or a later version (not ff)
 * with anything after a "-"; neither id all zeros. Lookaheads only, no
 * lookbehind: the regular expressions of other languages' tools read it too.
 */
export const TRACEPARENT_PATTERN = `^(?:00${TRACE_IDS}|(?!00|ff)[0-9a-f]{2}${TRACE_IDS}(?:-.*)?)$`;

/**
 * tracestateFault's rules as one JSON Schema pattern, for the OpenAPI
 * document (its length apart: maxLength): up to 32 key=value members between
 * commas, with spaces and tabs around them and empty ones between, no key twice.
 */
export const TRACESTATE_PATTERN =
  String.raw`^(?!(?:.*,)?[ \t]*([^=, \t]+)=[^,]*,(?:.*,)?[ \t]*\1=)` + // no key twice
  String.raw`[ \t,]*(?:${KEY_SOURCE}=${VALUE_SOURCE}(?:[ \t]*,[ \t,]*${KEY_SOURCE}=${VALUE_SOURCE}){0,31})?[ \t,]*$`;

/** The parts of a traceparent. */
export type Traceparent = { traceId: string; parentId: string; flags: number };

/** Why `text` is not a traceparent the spec lets a reader use, or null when it is one. */
export function traceparentFault(text: string): string | null {
  const match = TRACEPARENT.exec(text);
  if (match === null) return "must be version-traceid-parentid-flags in lowercase hex (2-32-16-2 digits)";
  const [, version, traceId, parentId, , rest] = match;
  if (version === "ff") return "has version ff, which the spec forbids";
  if (version === "00" && rest !== undefined) return "of version 00 must be exactly 55 characters";
  if (/^0+$/.test(traceId!)) return "has a trace-id of all zeros, which the spec forbids";
  if (/^0+$/.test(parentId!)) return "has a parent-id of all zeros, which the spec forbids";
  return null;
}

/** The parts of a traceparent, or null when it is not one (see traceparentFault). */
export function parseTraceparent(text: string): Traceparent | null {
  if (traceparentFault(text) !== null) return null;
  const [, traceId, parentId, flags] = text.split("-");
  return { traceId: traceId!, parentId: parentId!, flags: Number.parseInt(flags!, 16) };
}

/** A valid traceparent as version 00 writes it (a later version is stored as the 00 it contains). */
export function normalTraceparent(text: string): string {
  const parts = parseTraceparent(text)!;
  return formatTraceparent(parts.traceId, parts.parentId, parts.flags);
}

function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${(flags & 0xff).toString(16).padStart(2, "0")}`;
}

/** Why `text` is not a tracestate kept here, or null when it is one. */
export function tracestateFault(text: string): string | null {
  if (text.length > MAX_TRACESTATE) return `must be at most ${MAX_TRACESTATE} characters, got ${text.length}`;
  const members = text.split(",").map((member) => member.replace(/^[ \t]+|[ \t]+$/g, "")).filter((member) => member !== "");
  if (members.length > 32) return `must have at most 32 members, got ${members.length}`;
  const keys = new Set<string>();
  for (const member of members) {
    const equals = member.indexOf("=");
    const key = member.slice(0, equals);
    if (equals === -1 || !KEY.test(key) || !VALUE.test(member.slice(equals + 1))) return `has a member that is not key=value as the spec writes them: ${JSON.stringify(member.slice(0, 40))}`;
    if (keys.has(key)) return `has the key ${JSON.stringify(key)} twice`;
    keys.add(key);
  }
  return null;
}

/**
 * The trace context of a request's headers, as the spec tells a receiver to
 * read them: a traceparent that cannot be parsed is ignored, and its
 * tracestate with it (the trace restarts); a tracestate that cannot be parsed
 * (or is longer than MAX_TRACESTATE) is dropped and the traceparent kept.
 * Empty when there is none.
 */
export function traceContextOfHeaders(headers: Headers): { traceparent?: string; tracestate?: string } {
  const traceparent = headers.get("traceparent")?.trim();
  if (!traceparent || traceparentFault(traceparent) !== null) return {};
  const tracestate = headers.get("tracestate")?.trim();
  const keep = tracestate && tracestateFault(tracestate) === null;
  return { traceparent: normalTraceparent(traceparent), ...(keep && { tracestate }) };
}

/**
 * The trace context a job is enqueued with: its own fields when it has either
 * (they are the caller's word, checked by the store), else the request's
 * headers (see traceContextOfHeaders), never a mix of the two.
 */
export function traceContextFor(job: { traceparent?: string | null; tracestate?: string | null }, headers: Headers): { traceparent?: string | null; tracestate?: string | null } {
  if (job.traceparent != null || job.tracestate != null) return { traceparent: job.traceparent, tracestate: job.tracestate };
  return traceContextOfHeaders(headers);
}

/** The traceparent and tracestate of a span context, or null for an invalid (absent) one. */
export function traceContextOf(span: SpanContext): { traceparent: string; tracestate?: string } | null {
  if (!/^[0-9a-f]{32}$/.test(span.traceId) || /^0+$/.test(span.traceId) || !/^[0-9a-f]{16}$/.test(span.spanId) || /^0+$/.test(span.spanId)) return null;
  const tracestate = span.traceState?.serialize();
  return { traceparent: formatTraceparent(span.traceId, span.spanId, span.traceFlags), ...(tracestate && { tracestate }) };
}

/** The remote span context a stored traceparent (and tracestate) stands for, or null for none or an invalid one. */
export function spanContextOf(traceparent: string | null | undefined, tracestate?: string | null): SpanContext | null {
  const parts = traceparent ? parseTraceparent(traceparent) : null;
  if (parts === null) return null;
  return {
    traceId: parts.traceId,
    spanId: parts.parentId,
    traceFlags: parts.flags,
    isRemote: true,
    ...(tracestate && { traceState: createTraceState(tracestate) }),
  };
}
