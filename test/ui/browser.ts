import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, expect } from "vitest";
import { type Auth } from "../../src/index.ts";
import { type RunningServer, startServer } from "../../src/node.ts";

// What the browser tests share: Debian's Chromium driven by playwright-core (no
// browser download), and a real Node server on a fresh database whose clock the
// test moves by hand.

/** Where the browser is: Debian's package (`apt-get install -y chromium`), or CHROMIUM_PATH. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export const TOKEN = "ui-test-token";
/** The server's clock starts here: 2026-11-30 09:00 UTC, so screenshots read the same every run. */
export const T = Date.UTC(2026, 10, 30, 9, 0, 0);

/** How long `expect.poll` waits for the page (its default, 1 s, is short on a busy CI machine). */
export const WAIT = { timeout: 15_000 } as const;

/** One browser for a test file; each test opens its own context (its own sessionStorage). */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (or set CHROMIUM_PATH)`);
  }
  return chromium.launch({ executablePath: CHROMIUM });
}

/** A Node server as `npm start` runs it, on a database in a temp dir that `stop` removes. */
export async function uiServer(auth: Auth = { tokens: [TOKEN] }) {
  const dir = mkdtempSync(join(tmpdir(), "fencelease-ui-"));
  const clock = { now: T };
  const databaseUrl = `file:${join(dir, "ui.db")}`;
  const server: RunningServer = await startServer({ host: "127.0.0.1", port: 0, databaseUrl, auth, pushPrivate: "allow", clock: () => clock.now });

  /** Calls the API as a worker would, with the token, and answers the JSON body. */
  async function call(method: string, path: string, body?: unknown): Promise<any> {
    const headers: Record<string, string> = { Authorization: `Bearer ${TOKEN}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(`${server.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return response.json();
  }

  return {
    url: server.url,
    /** The server's database, for a test that writes what the API cannot yet (a store of its own on it). */
    databaseUrl,
    clock,
    call,
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type UiServer = Awaited<ReturnType<typeof uiServer>>;

/** A page in a fresh context, and what it did: every request, every CSP violation, every script error. */
export type Visit = { context: BrowserContext; page: Page; requests: string[]; violations: string[]; errors: string[] };

/** Opens a page `width` px wide, recording what it does; `close` checks nothing went wrong. */
export async function visit(browser: Browser, width = 1280): Promise<Visit> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  const visit: Visit = { context, page, requests: [], violations: [], errors: [] };
  page.on("request", (request) => visit.requests.push(request.url()));
  page.on("pageerror", (error) => visit.errors.push(error.message));
  await page.exposeFunction("reportViolation", (text: string) => visit.violations.push(text));
  // Before any script of the page: the browser reports each blocked inline script, eval or foreign load here.
  // (A string, as it runs in the page, whose DOM types the tests' tsconfig does not have.)
  await page.addInitScript(`document.addEventListener("securitypolicyviolation", (event) => window.reportViolation(event.violatedDirective + " " + event.blockedURI));`);
  return visit;
}

/**
 * Closes the visit, after checking that no request left the page's origin, that
 * the Content-Security-Policy blocked nothing, and that no script threw.
 */
export async function leave(visited: Visit, origin: string): Promise<void> {
  await visited.context.close();
  expect(visited.requests.length).toBeGreaterThan(0);
  expect(visited.requests.filter((url) => new URL(url).origin !== origin)).toEqual([]);
  expect(visited.violations).toEqual([]);
  expect(visited.errors).toEqual([]);
}

/** Signs in on /ui with the test token (or `token`), as a person would. */
export async function signIn(page: Page, url: string, token = TOKEN): Promise<void> {
  await page.goto(`${url}/ui`);
  await page.getByLabel("Token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Queues" }).waitFor();
}

/** Whether the page is no wider than its viewport: nothing to scroll sideways at 390 px. */
export async function fitsWidth(page: Page): Promise<boolean> {
  return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth") as Promise<boolean>;
}

/**
 * One browser and one server for a test file, started before its tests and
 * stopped after them; read `.browser` and `.server` inside the tests.
 */
export function browserAndServer(): { browser: Browser; server: UiServer } {
  const shared = {} as { browser: Browser; server: UiServer };
  beforeAll(async () => {
    [shared.browser, shared.server] = await Promise.all([launchBrowser(), uiServer()]);
  }, 60_000);
  afterAll(async () => {
    await shared.browser?.close();
    await shared.server?.stop();
  });
  return shared;
}
