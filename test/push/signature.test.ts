import { describe, expect, test } from "vitest";
import { newSecret, signatureHeader, signedBy } from "../../src/push/signature.ts";

// The published vectors of Standard Webhooks (its libraries' tests, e.g.
// libraries/javascript/src/webhook.test.ts and libraries/go/webhook_test.go
// in github.com/standard-webhooks/standard-webhooks): the same secret,
// message id, timestamp and payload must give the same signature here.
const VECTOR = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
/** A well-formed signature of something else, as the vectors' "invalid signature" cases use. */
const OTHER = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";

describe("the Standard Webhooks signature", () => {
  test("signs the published vector as the spec's libraries do, with or without the whsec_ prefix", async () => {
    const message = { id: VECTOR.id, timestamp: VECTOR.timestamp, body: VECTOR.body };
    expect(await signatureHeader([VECTOR.secret], message)).toBe(VECTOR.signature);
    expect(await signatureHeader([VECTOR.secret.slice("whsec_".length)], message)).toBe(VECTOR.signature);
  });

  test("signs with each secret given, newest first, space-separated", async () => {
    const message = { id: VECTOR.id, timestamp: VECTOR.timestamp, body: VECTOR.body };
    const fresh = newSecret();
    const header = await signatureHeader([fresh, VECTOR.secret], message);
    const [first, second] = header.split(" ");
    expect(second).toBe(VECTOR.signature);
    expect(first).toBe(await signatureHeader([fresh], message));
    expect(first).not.toBe(second);
  });

  test("accepts the vector's signature among others (the multi-signature vector), and only for its own message and secret", async () => {
    const message = { id: VECTOR.id, timestamp: VECTOR.timestamp, body: VECTOR.body };
    const several = [OTHER, OTHER.replace("v1,", "v2,"), VECTOR.signature, OTHER].join(" ");
    expect(await signedBy(VECTOR.secret, several, message)).toBe(true);
    expect(await signedBy(VECTOR.secret, OTHER, message)).toBe(false);
    expect(await signedBy(VECTOR.secret, VECTOR.signature.replace("v1,", "v2,"), message)).toBe(false); // another version is not v1
    expect(await signedBy(VECTOR.secret, VECTOR.signature, { ...message, body: '{"test": 2432232315}' })).toBe(false);
    expect(await signedBy(VECTOR.secret, VECTOR.signature, { ...message, timestamp: VECTOR.timestamp + 1 })).toBe(false);
    expect(await signedBy(VECTOR.secret, VECTOR.signature, { ...message, id: "msg_other" })).toBe(false);
    expect(await signedBy(newSecret(), VECTOR.signature, message)).toBe(false);
  });

  test("passes over a partial or malformed signature without throwing", async () => {
    const message = { id: VECTOR.id, timestamp: VECTOR.timestamp, body: VECTOR.body };
    for (const header of [VECTOR.signature.slice(0, 8), "v1,", "v1", "", "v1,dawfeoifkpqwoekfpqoekf", "v1,!!!!", " "]) {
      expect(await signedBy(VECTOR.secret, header, message)).toBe(false);
    }
  });

  test("makes secrets of 32 random bytes, whsec_ and base64, each new", () => {
    const secrets = new Set(Array.from({ length: 20 }, newSecret));
    expect(secrets.size).toBe(20);
    for (const secret of secrets) {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(atob(secret.slice(6)).length).toBe(32);
    }
  });

  test("refuses a secret that is not base64, saying what one looks like", async () => {
    await expect(signatureHeader(["whsec_not base64!"], { id: "msg_1", timestamp: 1, body: "{}" })).rejects.toThrow(/whsec_ followed by base64/);
  });
});
