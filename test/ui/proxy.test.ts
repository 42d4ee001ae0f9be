import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type RunningServer, startServer } from "../../src/node.ts";
import { freePort, until } from "../runtime/npm-process.ts";
import { launchBrowser, leave, signIn, TOKEN, visit, WAIT } from "./browser.ts";

// The dashboard, /docs and the API behind a real nginx that serves them under
// /fencelease/, with the very location block of docs/deployment.md: the pages
// ask for nothing outside that path, and a long poll goes through it for its
// whole 25 s, or is answered at once when a job comes.

/** Debian's nginx (`apt-get install -y nginx-light`). */
const NGINX = "/usr/sbin/nginx";

/** The nginx block of docs/deployment.md's "Behind a reverse proxy". */
function documentedLocation(): string {
  const text = readFileSync("docs/deployment.md", "utf8");
  const section = text.slice(text.indexOf("### Behind a reverse proxy\n"));
  return /```nginx\n([\s\S]*?)```/.exec(section)![1]!;
}

/** nginx in the foreground on `port`, with the documented location pointed at `upstream`; its files in a folder of the test's. */
async function nginx(dir: string, port: number, upstream: string): Promise<ChildProcess> {
  if (!existsSync(NGINX)) throw new Error(`no nginx at ${NGINX}: install it with \`apt-get install -y nginx-light\``);
  chmodSync(dir, 0o777); // its workers run as nobody, and keep their temp files here
  const location = documentedLocation().replace("http://127.0.0.1:8787/", `${upstream}/`);
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((kind) => `${kind}_temp_path ${join(dir, kind)};`).join("\n  ");
  writeFileSync(join(dir, "nginx.conf"), `worker_processes 1;
pid ${join(dir, "nginx.pid")};
error_log stderr warn;
events { worker_connections 64; }
http {
  access_log off;
  ${temp}
  server {
    listen 127.0.0.1:${port};
    ${location}
  }
}
`);
  const child = spawn(NGINX, ["-e", "stderr", "-p", dir, "-c", join(dir, "nginx.conf"), "-g", "daemon off;"], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const up = await until(async () => (await fetch(`http://127.0.0.1:${port}/fencelease/healthz`).catch(() => null))?.status === 200, 15_000);
  if (!up) throw new Error(`nginx did not come up: ${stderr}`);
  return child;
}

let browser: Browser;
let server: RunningServer;
let proxy: ChildProcess;
let base: string;
const dir = mkdtempSync(join(tmpdir(), "fencelease-proxy-"));

beforeAll(async () => {
  [browser, server] = await Promise.all([launchBrowser(), startServer({ host: "127.0.0.1", port: 0, databaseUrl: `file:${join(dir, "proxy.db")}`, auth: { tokens: [TOKEN] } })]);
  const port = await freePort();
  proxy = await nginx(dir, port, server.url);
  base = `http://127.0.0.1:${port}/fencelease`;
}, 60_000);

afterAll(async () => {
  proxy?.kill("SIGQUIT"); // nginx's graceful stop
  await browser?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const call = (method: string, path: string, body?: unknown) =>
  fetch(`${base}${path}`, { method, headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });

test("under /fencelease/ the dashboard signs in and shows its queues, and /docs loads, each asking for nothing outside /fencelease/", async () => {
  expect((await call("POST", "/v1/jobs", { id: "proxied-1", queue: "proxied" })).status).toBe(201);
  const visited = await visit(browser);
  const { page } = visited;
  await signIn(page, base);
  await page.locator("tr[data-queue='proxied']").first().waitFor(WAIT);
  await page.goto(`${base}/ui#/job/proxied-1`);
  await page.locator("h1 .status-queued").waitFor(WAIT);
  await page.getByRole("link", { name: "API" }).click();
  await page.locator(".swagger-ui .opblock").first().waitFor(WAIT);
  expect(page.url()).toBe(`${base}/docs`);
  expect(visited.requests.filter((url) => !url.startsWith(`${base}/`))).toEqual([]);
  expect(visited.requests).toEqual(expect.arrayContaining([`${base}/ui/app.js`, `${base}/v1/stats`, `${base}/openapi.json`]));
  await leave(visited, new URL(base).origin);
});

test("a claim with waitMs 25,000 on an empty queue goes through for its whole 25 s; one woken by an enqueue is answered at once", async () => {
  const started = Date.now();
  const empty = call("POST", "/v1/queues/quiet/claim", { owner: "w", ttlMs: 60_000, waitMs: 25_000 });
  const woken = call("POST", "/v1/queues/woken/claim", { owner: "w", ttlMs: 60_000, waitMs: 25_000 });
  await until(() => server.waiting === 2, 10_000);
  expect((await call("POST", "/v1/jobs", { id: "wake-1", queue: "woken" })).status).toBe(201);
  const answered = await woken;
  expect(Date.now() - started).toBeLessThan(10_000);
  expect([answered.status, await answered.json()]).toEqual([200, expect.objectContaining({ leases: [expect.objectContaining({ fence: 1, job: expect.objectContaining({ id: "wake-1" }) })] })]);
  const waited = await empty;
  expect(waited.status).toBe(200);
  expect(await waited.json()).toMatchObject({ leases: [], waitedMs: expect.any(Number) });
  expect(Date.now() - started).toBeGreaterThanOrEqual(25_000);
}, 60_000);
