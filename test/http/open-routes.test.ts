import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { gunzipSync } from "node:zlib";
import { describe, expect, test } from "vitest";
import { startServer, uiFilesFromDisk } from "../../src/node.ts";
import { freshApp } from "../fresh-app.ts";
import { freshUrl } from "../fresh-db.ts";

// The routes anyone may call without a token: the dashboard's files, swagger-ui,
// the OpenAPI document, /healthz and /. Loops of anonymous requests to them
// must not cost the server more than the refused API calls beside them.

const SWAGGER_DIR = createRequire(import.meta.url).resolve("swagger-ui-dist/package.json").replace(/package\.json$/, "");

/** Each open file with the bytes it must serve. */
const FILES: [string, () => Buffer][] = [
  ["/ui", () => readFileSync("src/ui/index.html")],
  ["/docs", () => readFileSync("src/ui/docs.html")],
  ["/ui/app.js", () => readFileSync("src/ui/app.js")],
  ["/ui/favicon.svg", () => readFileSync("src/ui/favicon.svg")],
  ["/ui/vendor/swagger-ui/swagger-ui-bundle.js", () => readFileSync(`${SWAGGER_DIR}swagger-ui-bundle.js`)],
];

const withUi = () => freshApp({ ui: uiFilesFromDisk() });

describe("the open files", () => {
  test.each(FILES)("%s has a strong ETag, and If-None-Match with it answers 304 with no body", async (path, bytes) => {
    const { app } = await withUi();
    const first = await app.request(path);
    expect(first.status).toBe(200);
    const etag = first.headers.get("ETag");
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/); // strong: no W/
    expect(Buffer.from(await first.arrayBuffer()).equals(bytes())).toBe(true);
    expect(first.headers.get("Content-Length")).toBe(String(bytes().length));

    const again = await app.request(path, { headers: { "If-None-Match": etag! } });
    expect(again.status).toBe(304);
    expect(again.headers.get("ETag")).toBe(etag);
    expect(again.headers.get("Cache-Control")).toBe("no-cache");
    expect(await again.text()).toBe("");
    // Another tag, or a list without ours, gets the file.
    expect((await app.request(path, { headers: { "If-None-Match": '"someone-else"' } })).status).toBe(200);
    expect((await app.request(path, { headers: { "If-None-Match": `"x", W/${etag}` } })).status).toBe(304);
  });

  test.each(FILES)("%s is gzipped for a client that takes gzip, byte for byte the file once inflated", async (path, bytes) => {
    const { app } = await withUi();
    const zipped = await app.request(path, { headers: { "Accept-Encoding": "gzip, deflate, br" } });
    expect(zipped.status).toBe(200);
    expect(zipped.headers.get("Vary")).toBe("Accept-Encoding");
    expect(zipped.headers.get("Content-Encoding")).toBe("gzip");
    const body = Buffer.from(await zipped.arrayBuffer());
    expect(body.length).toBeLessThan(bytes().length);
    expect(gunzipSync(body).equals(bytes())).toBe(true);
    const etag = zipped.headers.get("ETag")!;
    expect(etag).not.toBe((await app.request(path)).headers.get("ETag")); // another representation, another tag
    expect((await app.request(path, { headers: { "Accept-Encoding": "gzip", "If-None-Match": etag } })).status).toBe(304);
    // gzip;q=0 refuses it.
    expect((await app.request(path, { headers: { "Accept-Encoding": "gzip;q=0" } })).headers.get("Content-Encoding")).toBeNull();
  });

  test("the big ones are gzipped: swagger-ui's bundle to well under half", async () => {
    const { app } = await withUi();
    const zipped = await app.request("/ui/vendor/swagger-ui/swagger-ui-bundle.js", { headers: { "Accept-Encoding": "gzip" } });
    expect(zipped.headers.get("Content-Encoding")).toBe("gzip");
    expect(Number(zipped.headers.get("Content-Length"))).toBeLessThan(readFileSync(`${SWAGGER_DIR}swagger-ui-bundle.js`).length / 2);
  });

  test("/openapi.json has an ETag too, is gzipped, and is the same document each time", async () => {
    const { app } = await freshApp();
    const first = await app.request("/openapi.json");
    const second = await app.request("/openapi.json", { headers: { "Accept-Encoding": "gzip" } });
    expect(first.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(second.headers.get("Content-Encoding")).toBe("gzip");
    expect(gunzipSync(Buffer.from(await second.arrayBuffer())).toString()).toBe(await first.text());
    expect((await app.request("/openapi.json", { headers: { "If-None-Match": first.headers.get("ETag")! } })).status).toBe(304);
  });

  test("a real Node server sends the gzipped files and the 304s through its sockets", async () => {
    const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: freshUrl(), auth: { tokens: ["t"] }, maintainEveryMs: 0, scheduleRecheckMs: 0 });
    try {
      const bundle = await fetch(`${server.url}/ui/vendor/swagger-ui/swagger-ui-bundle.js`); // fetch asks for gzip and inflates it
      expect(bundle.headers.get("Content-Encoding")).toBe("gzip");
      expect(Buffer.from(await bundle.arrayBuffer()).equals(readFileSync(`${SWAGGER_DIR}swagger-ui-bundle.js`))).toBe(true);
      const again = await fetch(`${server.url}/ui/vendor/swagger-ui/swagger-ui-bundle.js`, { headers: { "If-None-Match": bundle.headers.get("ETag")! } });
      expect(again.status).toBe(304);
    } finally {
      await server.stop();
    }
  });
});

/** The server CPU, in µs, of one request to `path` (of `n`, after a warm-up), the answer's body left unread: what a loop of them costs. */
async function cpuPerRequest(app: { request: (path: string, init?: RequestInit) => Response | Promise<Response> }, path: string, headers: Record<string, string>, n: number): Promise<number> {
  const once = async () => {
    const response = await app.request(path, { headers });
    await response.body?.cancel();
    return response.status;
  };
  for (let i = 0; i < 20; i++) await once();
  const started = process.cpuUsage();
  for (let i = 0; i < n; i++) await once();
  const used = process.cpuUsage(started);
  return (used.user + used.system) / n;
}

describe("the cost of an anonymous request", () => {
  test("to each open route, at most twice that of an API request refused 401", async () => {
    const { app } = await withUi();
    const N = 300;
    const browser = { "Accept-Encoding": "gzip, deflate, br", Accept: "text/html,*/*" };
    const costs: Record<string, number> = {};
    // Measured twice, the smaller kept: a test under load sees the other processes' time in its own.
    const measure = async (name: string, path: string, headers: Record<string, string>) => {
      costs[name] = Math.min(await cpuPerRequest(app, path, headers, N), await cpuPerRequest(app, path, headers, N));
    };
    await measure("refused", "/v1/stats", {});
    for (const [path] of FILES) {
      await measure(path, path, {});
      await measure(`${path} gzip`, path, browser);
    }
    for (const path of ["/openapi.json", "/healthz", "/"]) await measure(path, path, {});
    await measure("/openapi.json gzip", "/openapi.json", browser);
    const over = Object.entries(costs).filter(([name, cost]) => name !== "refused" && cost > 2 * costs.refused!);
    expect(over, JSON.stringify(costs)).toEqual([]);
  }, 60_000);
});
