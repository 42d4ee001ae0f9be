// The Standard Webhooks signature (https://www.standardwebhooks.com, its
// symmetric scheme), in Web Crypto alone, so that the same lines sign on Node
// and on Workers and verify in any endpoint (src/client/verify-push.ts):
//
//   webhook-signature: v1,<base64 of HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")>
//
// where the key is the bytes of the secret's base64 after its `whsec_`
// prefix. Several signatures, space-separated, are one header: a delivery is
// signed with each secret in force (the new and the previous one, between
// two rotations), and a verifier accepts the request if any one matches.

/** The prefix of a secret as Standard Webhooks shows it. */
export const SECRET_PREFIX = "whsec_";

/** How many random bytes a new secret holds (the scheme asks for 24 to 64). */
const SECRET_BYTES = 32;

const utf8 = new TextEncoder();

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** The key bytes of a secret, with or without its `whsec_` prefix; a TypeError for one that is not base64. */
function keyBytes(secret: string): Uint8Array {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  let binary: string;
  try {
    binary = atob(encoded);
  } catch {
    throw new TypeError("a push secret is whsec_ followed by base64, as the server answered it");
  }
  if (binary.length === 0) throw new TypeError("a push secret is whsec_ followed by base64, as the server answered it; this one is empty");
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

/** A new secret: `whsec_` and the base64 of 32 random bytes. */
export function newSecret(): string {
  return SECRET_PREFIX + base64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
}

/** The HMAC-SHA256 of `id.timestamp.body` under `secret`, as the bytes of the signature. */
async function mac(secret: string, content: string): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", keyBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, utf8.encode(content)));
}

/** What is signed: the message id, the timestamp (whole seconds since the epoch) and the body, as sent. */
export type Signed = { id: string; timestamp: number; body: string };

/** The signed content, as the scheme joins it. */
const content = ({ id, timestamp, body }: Signed) => `${id}.${timestamp}.${body}`;

/**
 * signatureHeader answers the value of `webhook-signature` for a message:
 * one `v1,<base64>` per secret, in the order given, space-separated.
 */
export async function signatureHeader(secrets: string[], message: Signed): Promise<string> {
  const signatures = await Promise.all(secrets.map(async (secret) => `v1,${base64(await mac(secret, content(message)))}`));
  return signatures.join(" ");
}

/** Whether two byte strings are equal, in a time that depends on their length only. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let differ = 0;
  for (let i = 0; i < a.length; i++) differ |= a[i]! ^ b[i]!;
  return differ === 0;
}

/**
 * signedBy answers whether any `v1` signature of `header` (a
 * `webhook-signature` value) is that of the message under `secret`; other
 * versions and malformed entries are passed over.
 */
export async function signedBy(secret: string, header: string, message: Signed): Promise<boolean> {
  const expected = await mac(secret, content(message));
  let found = false;
  for (const entry of header.split(" ")) {
    const [version, signature] = entry.split(",", 2);
    if (version !== "v1" || !signature) continue;
    let given: Uint8Array;
    try {
      given = Uint8Array.from(atob(signature), (char) => char.charCodeAt(0));
    } catch {
      continue;
    }
    // Every entry is compared, so the time taken does not tell which one matched.
    if (sameBytes(expected, given)) found = true;
  }
  return found;
}
