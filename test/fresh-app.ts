import { type AppOptions, createApp } from "../src/index.ts";
import { freshStore } from "./fresh-db.ts";

export const T = 1_000_000; // the test clock starts here
export const TOKEN = "test-token";

/** What a request answered: its status, headers and JSON body. */
export type Answer = { status: number; headers: Headers; body: any };

/**
 * The app on a fresh file database, with a clock the test moves by hand,
 * and `call` to send a request with the test token.
 */
export async function freshApp(overrides: Partial<AppOptions> = {}) {
  const fresh = await freshStore();
  const clock = { now: T };
  const app = createApp({ store: fresh.store, auth: { tokens: [TOKEN] }, clock: () => clock.now, ...overrides });

  async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const init: RequestInit = { method, headers: { Authorization: `Bearer ${TOKEN}`, ...headers } };
    if (body !== undefined) {
      init.body = typeof body === "string" ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)["Content-Type"] ??= "application/json";
    }
    const response = await app.request(path, init);
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text.startsWith("{") ? JSON.parse(text) : text };
  }

  return { ...fresh, app, clock, call };
}
