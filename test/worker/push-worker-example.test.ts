import { expect, test } from "vitest";
import pushWorker from "../../examples/push-worker/src/index.ts";
import { newSecret, signatureHeader } from "../../src/push/signature.ts";

// examples/push-worker in the Workers runtime: a delivery signed as the
// server signs it is answered with the work's result; one signed with another
// secret, or long ago, is refused; a job it can never do is failed with a
// Retry-After of a day.

const SECRET = newSecret();

/** A delivery of a job with `payload`, as the server sends it, signed with `secrets` at `signedAt` (ms). */
async function delivery(payload: unknown, secrets = [SECRET], signedAt = Date.now()): Promise<Request> {
  const body = JSON.stringify({ id: "mail-1", queue: "mail", payload, owner: "push", fence: 4, until: signedAt + 15_000, attempts: 2, status: "leased" });
  const id = "msg_example";
  const timestamp = Math.floor(signedAt / 1000);
  return new Request("https://push-worker.example/", {
    method: "POST",
    headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": await signatureHeader(secrets, { id, timestamp, body }) },
    body,
  });
}

test("a signed delivery is answered with the work's result; the rotation's two secrets both work", async () => {
  const answer = await pushWorker.fetch(await delivery({ to: "ada@example.com", subject: "Hello" }), { PUSH_SECRET: SECRET });
  expect(answer.status).toBe(200);
  expect(await answer.json()).toEqual({ sent: "Hello to ada@example.com", id: "mail-1" });
  const older = newSecret();
  const rotating = await pushWorker.fetch(await delivery({ to: "ada@example.com", subject: "Hi" }, [older]), { PUSH_SECRET: `${SECRET},${older}` });
  expect(rotating.status).toBe(200);
});

test("another secret, an old timestamp and a GET are refused; a payload it cannot use fails with a Retry-After of a day", async () => {
  const payload = { to: "ada@example.com", subject: "Hello" };
  expect((await pushWorker.fetch(await delivery(payload, [newSecret()]), { PUSH_SECRET: SECRET })).status).toBe(401);
  const old = await pushWorker.fetch(await delivery(payload, [SECRET], Date.now() - 10 * 60_000), { PUSH_SECRET: SECRET });
  expect(old.status).toBe(401);
  expect(await old.text()).toMatch(/more than 300 s/);
  expect((await pushWorker.fetch(new Request("https://push-worker.example/"), { PUSH_SECRET: SECRET })).status).toBe(405);
  const unusable = await pushWorker.fetch(await delivery({ subject: "no one" }), { PUSH_SECRET: SECRET });
  expect(unusable.status).toBe(422);
  expect(unusable.headers.get("Retry-After")).toBe("86400");
});
