import type { Context, MiddlewareHandler } from "hono";
import { ApiError } from "../api-error.ts";

/**
 * How much of a body over the limit is read (and thrown away) before the 413,
 * as a multiple of the limit. A server that answers and closes while the
 * client is still writing leaves unread bytes on the socket, which the kernel
 * answers with a reset: the client gets EPIPE or ECONNRESET in place of the
 * 413. Read to the end, the 413 always arrives. Beyond this the server answers
 * at once and closes, and such a client may see a reset.
 */
const DRAIN_FACTOR = 4;

/**
 * Refuses (413) a body over `maxBytes`, always after Connection: close. A
 * request that says its length is judged by its Content-Length alone, without
 * touching a body within the limit: reading `request.body` makes
 * @hono/node-server build a full web Request and stream for every POST (a few
 * hundred µs, more than the lease's SQL) instead of reading the body straight
 * from the socket. A body sent in chunks, with no length, is counted as it
 * streams. A body over the limit, up to DRAIN_FACTOR times it, is read to its
 * end before the answer, so that the client reads its 413.
 */
export function limitBody(maxBytes: number): MiddlewareHandler {
  const drainBytes = maxBytes * DRAIN_FACTOR;
  const tooLarge = () => {
    // Past the drain's bound the rest is never read, so the connection cannot carry another request: say so, always.
    throw new ApiError(413, "payload_too_large", `the body must be at most ${maxBytes} bytes`, { Connection: "close" });
  };
  return async function limitBody(c, next) {
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    const length = c.req.header("Content-Length");
    if (length === undefined || c.req.header("Transfer-Encoding") !== undefined) {
      if (!(await counted(c, maxBytes, drainBytes))) tooLarge();
      return next();
    }
    if (!/^\d+$/.test(length)) tooLarge();
    if (Number(length) <= maxBytes) return next();
    if (Number(length) <= drainBytes && c.req.raw.body) await readAtMost(c.req.raw.body.getReader(), drainBytes);
    tooLarge();
  };
}

/** Reads a body sent with no length into memory, for the route to parse; false when it is over `maxBytes` (read on, and thrown away, up to `drainBytes`). */
async function counted(c: Context, maxBytes: number, drainBytes: number): Promise<boolean> {
  if (!c.req.raw.body) return true;
  const reader = c.req.raw.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await readAtMost(reader, drainBytes - size);
      return false;
    }
    chunks.push(value);
  }
  const body = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.byteLength;
  }
  c.req.raw = new Request(c.req.raw, { body });
  return true;
}

/** Reads and throws away the rest of a body, up to `bytes`; past that, stops reading it. */
async function readAtMost(reader: ReadableStreamDefaultReader<Uint8Array>, bytes: number): Promise<void> {
  let left = bytes;
  while (left >= 0) {
    const { done, value } = await reader.read();
    if (done) return;
    left -= value.byteLength;
  }
  await reader.cancel().catch(() => {});
}
