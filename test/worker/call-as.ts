import { SELF } from "cloudflare:test";

/** The token of FENCELEASE_TOKENS in vitest.config.ts: admin for every queue. */
export const ADMIN = "worker-test-token";

/** A call through the Worker with `token`: its status, and its body as JSON (null when it has none). */
export async function callAs(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await SELF.fetch(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json().catch(() => null)) as any };
}
