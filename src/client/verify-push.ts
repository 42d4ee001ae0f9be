import { signedBy } from "../push/signature.ts";
import type { Job } from "./types.ts";

/** How far a delivery's webhook-timestamp may be from the endpoint's clock, either way: 5 minutes. */
export const PUSH_TOLERANCE_MS = 5 * 60 * 1000;

/** Why verifyPush refused a request. */
export type PushRefusal = "missing_header" | "bad_timestamp" | "too_old" | "too_new" | "bad_signature" | "bad_body";

/** A request verifyPush refused: it is no delivery of this queue's push, or an old one replayed; answer it 401 and do nothing. */
export class PushVerificationError extends Error {
  readonly reason: PushRefusal;
  constructor(reason: PushRefusal, message: string) {
    super(message);
    this.name = "PushVerificationError";
    this.reason = reason;
  }
}

/** A delivery, as a Node handler has it: the headers (node:http's, or a Headers) and the body read as text. */
export type PushMessage = Request | { headers: Headers | Record<string, string | string[] | undefined>; body: string };

/**
 * A verified delivery: the job, and the lease it carries, read from the
 * signed body (the fencelease-* headers say the same, unsigned, for a reader
 * that does not parse). Answer 2xx to complete the lease with your answer's
 * body as the result, 202 to end it yourself later with `owner` and `fence`
 * (renew before `until`), anything else to fail it.
 */
export type PushDelivery<Payload = unknown> = {
  job: Job<Payload>;
  /** The owner to renew, complete or fail the lease with. */
  owner: string;
  fence: number;
  /** The lease lasts until this time (ms since the epoch, the server's clock): the request's timeout and a little more. */
  until: number;
  /** Which attempt this is (1 for the first). */
  attempt: number;
  /** The webhook-id: the same for every delivery of this job, a key to drop a repeat by. */
  webhookId: string;
  /** The webhook-timestamp, in whole seconds since the epoch. */
  timestamp: number;
  /** The body exactly as signed. */
  body: string;
};

function header(headers: PushMessage["headers"], name: string): string | null {
  // By shape, not instanceof: a Headers of another realm (a framework's fetch) is one too.
  if (typeof headers.get === "function") return (headers as Headers).get(name);
  const value = (headers as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

/**
 * verifyPush checks that a request is a push delivery signed with `secret`
 * (the `whsec_...` its queue's push settings answered; after a rotation,
 * either may be given, or both as a list) whose timestamp is within 5
 * minutes of now, and answers the job and lease it carries. It throws
 * PushVerificationError for anything else: a header missing, a signature
 * that matches no secret (a body changed on the way), a timestamp older or
 * newer than PUSH_TOLERANCE_MS (a replay). It reads a Request's body (give a
 * clone to read it again). Works wherever Web Crypto does: Workers, Node,
 * Deno, Bun.
 *
 * @example
 * export default {
 *   async fetch(request: Request, env: { PUSH_SECRET: string }) {
 *     const push = await verifyPush<{ to: string }>(request, env.PUSH_SECRET).catch(() => null);
 *     if (push === null) return new Response("not signed", { status: 401 });
 *     await sendMail(push.job.payload.to);
 *     return Response.json({ sent: true }); // stored as the job's result
 *   },
 * };
 */
export async function verifyPush<Payload = unknown>(message: PushMessage, secret: string | string[], options: { now?: number | undefined } = {}): Promise<PushDelivery<Payload>> {
  const headers = message.headers;
  const id = header(headers, "webhook-id");
  const stamp = header(headers, "webhook-timestamp");
  const signature = header(headers, "webhook-signature");
  if (id === null || stamp === null || signature === null) {
    throw new PushVerificationError("missing_header", "a push delivery has the headers webhook-id, webhook-timestamp and webhook-signature; this request lacks one");
  }
  if (!/^\d+$/.test(stamp.trim())) throw new PushVerificationError("bad_timestamp", `webhook-timestamp must be whole seconds since the epoch, got ${JSON.stringify(stamp)}`);
  const timestamp = Number(stamp.trim());
  const ageMs = (options.now ?? Date.now()) - timestamp * 1000;
  if (ageMs > PUSH_TOLERANCE_MS) throw new PushVerificationError("too_old", `the delivery was signed ${Math.round(ageMs / 1000)} s ago, more than ${PUSH_TOLERANCE_MS / 1000} s: a replay, or a clock far off`);
  if (-ageMs > PUSH_TOLERANCE_MS) throw new PushVerificationError("too_new", `the delivery is dated ${Math.round(-ageMs / 1000)} s ahead, more than ${PUSH_TOLERANCE_MS / 1000} s: a clock far off`);
  const body = typeof message.body === "string" ? message.body : await (message as Request).text();
  const secrets = Array.isArray(secret) ? secret : [secret];
  let signed = false;
  for (const each of secrets) if (await signedBy(each, signature, { id, timestamp, body })) signed = true;
  if (!signed) throw new PushVerificationError("bad_signature", "no signature of the delivery matches the secret: a body changed on the way, or another queue's secret");
  let job: Job<Payload>;
  try {
    job = JSON.parse(body) as Job<Payload>;
  } catch {
    throw new PushVerificationError("bad_body", "the signed body is not JSON");
  }
  if (typeof job !== "object" || job === null || typeof job.owner !== "string" || typeof job.fence !== "number") {
    throw new PushVerificationError("bad_body", "the signed body is not a job with its lease");
  }
  return { job, owner: job.owner, fence: job.fence, until: job.until, attempt: job.attempts, webhookId: id, timestamp, body };
}
