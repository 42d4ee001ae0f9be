import { describe, expect, test } from "vitest";
import { PUSH_TOLERANCE_MS, PushVerificationError, verifyPush } from "../../src/client/index.ts";
import { newSecret, signatureHeader } from "../../src/push/signature.ts";

// verifyPush as an endpoint calls it: a Request (a Worker's) or the headers
// and body of a node:http handler, one secret or the two of a rotation.

const NOW = Date.UTC(2026, 0, 1, 12);
const JOB = { id: "invoice-42", queue: "mail", payload: { to: "ada@example.com" }, owner: "push", fence: 3, until: NOW + 15_000, attempts: 2, status: "leased" };

/** A delivery of JOB signed with `secrets` at `signedAt`, as headers and body. */
async function delivery(secrets: string[], signedAt = NOW, body = JSON.stringify(JOB)) {
  const id = "msg_test";
  const timestamp = Math.floor(signedAt / 1000);
  const headers = { "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": await signatureHeader(secrets, { id, timestamp, body }), "content-type": "application/json" };
  return { headers, body };
}

/** The refusal verifyPush throws, as its reason. */
async function reasonOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => null, (caught: unknown) => caught);
  expect(error).toBeInstanceOf(PushVerificationError);
  return (error as PushVerificationError).reason;
}

describe("verifyPush", () => {
  test("answers the job and its lease from the signed body, given a Request or a Node handler's headers and body", async () => {
    const secret = newSecret();
    const { headers, body } = await delivery([secret]);
    const expected = { job: JOB, owner: "push", fence: 3, until: NOW + 15_000, attempt: 2, webhookId: "msg_test", timestamp: NOW / 1000, body };
    expect(await verifyPush({ headers, body }, secret, { now: NOW })).toEqual(expected);
    expect(await verifyPush(new Request("https://endpoint.example/", { method: "POST", headers, body }), secret, { now: NOW })).toEqual(expected);
    expect(await verifyPush({ headers: new Headers(headers), body }, secret, { now: NOW })).toEqual(expected);
  });

  test("after a rotation, a delivery signed with both secrets passes with either, and one secret of another queue fails", async () => {
    const [older, newer] = [newSecret(), newSecret()];
    const { headers, body } = await delivery([newer, older]);
    expect((await verifyPush({ headers, body }, older, { now: NOW })).fence).toBe(3);
    expect((await verifyPush({ headers, body }, newer, { now: NOW })).fence).toBe(3);
    expect((await verifyPush({ headers, body }, [newSecret(), older], { now: NOW })).fence).toBe(3);
    expect(await reasonOf(verifyPush({ headers, body }, newSecret(), { now: NOW }))).toBe("bad_signature");
  });

  test("refuses a body changed on the way, and a signature header of someone else's", async () => {
    const secret = newSecret();
    const { headers, body } = await delivery([secret]);
    expect(await reasonOf(verifyPush({ headers, body: body.replace('"fence":3', '"fence":4') }, secret, { now: NOW }))).toBe("bad_signature");
    expect(await reasonOf(verifyPush({ headers, body: `${body} ` }, secret, { now: NOW }))).toBe("bad_signature");
    const other = await delivery([newSecret()]);
    expect(await reasonOf(verifyPush({ headers: { ...headers, "webhook-signature": other.headers["webhook-signature"] }, body }, secret, { now: NOW }))).toBe("bad_signature");
    expect(await reasonOf(verifyPush({ headers: { ...headers, "webhook-id": "msg_other" }, body }, secret, { now: NOW }))).toBe("bad_signature");
  });

  test("refuses a timestamp more than 5 minutes old or ahead, and takes one just within", async () => {
    const secret = newSecret();
    const old = await delivery([secret], NOW - PUSH_TOLERANCE_MS - 1_000);
    expect(await reasonOf(verifyPush(old, secret, { now: NOW }))).toBe("too_old");
    await expect(verifyPush(old, secret, { now: NOW })).rejects.toThrow("the delivery was signed 301 s ago, more than 300 s: a replay, or a clock far off");
    const ahead = await delivery([secret], NOW + PUSH_TOLERANCE_MS + 1_000);
    expect(await reasonOf(verifyPush(ahead, secret, { now: NOW }))).toBe("too_new");
    expect((await verifyPush(await delivery([secret], NOW - PUSH_TOLERANCE_MS), secret, { now: NOW })).fence).toBe(3);
    expect((await verifyPush(await delivery([secret], NOW + PUSH_TOLERANCE_MS), secret, { now: NOW })).fence).toBe(3);
    // Without `now`, the clock of the endpoint: a delivery signed an hour ago is refused.
    expect(await reasonOf(verifyPush(await delivery([secret], Date.now() - 3_600_000), secret))).toBe("too_old");
  });

  test("refuses a request without the three headers, with a timestamp that is not seconds, or whose signed body is no job", async () => {
    const secret = newSecret();
    const { headers, body } = await delivery([secret]);
    for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"] as const) {
      const { [name]: _, ...without } = headers;
      expect(await reasonOf(verifyPush({ headers: without, body }, secret, { now: NOW }))).toBe("missing_header");
    }
    expect(await reasonOf(verifyPush({ headers: { ...headers, "webhook-timestamp": "soon" }, body }, secret, { now: NOW }))).toBe("bad_timestamp");
    expect(await reasonOf(verifyPush(await delivery([secret], NOW, "not json"), secret, { now: NOW }))).toBe("bad_body");
    expect(await reasonOf(verifyPush(await delivery([secret], NOW, '{"id":"x"}'), secret, { now: NOW }))).toBe("bad_body");
  });
});
