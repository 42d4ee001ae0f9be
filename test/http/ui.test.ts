import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { createApp } from "../../src/index.ts";
import { UI_CSP } from "../../src/http/ui.ts";
import { uiFilesFromDisk } from "../../src/runtime/node/ui-files.ts";
import { freshApp, TOKEN } from "../fresh-app.ts";
import type { ErrorBody } from "../../src/http/errors.ts";

// The dashboard and the docs as the app serves them; test/ui/dashboard.test.ts drives them in Chromium.

const withUi = () => freshApp({ ui: uiFilesFromDisk() });

/** The same-origin files a page loads: every script src and stylesheet or icon href. */
function referenced(html: string, page: string): string[] {
  // Relative to the page, as a browser resolves them (relative, so that a proxy may serve it all under a prefix).
  return [...html.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)="([^"]+)"/g)].map((match) => new URL(match[1]!, `http://fencelease.test${page}`).pathname);
}

describe("the dashboard's files", () => {
  test("/ui and /docs are served without a token, with a strict Content-Security-Policy", async () => {
    const { app } = await withUi();
    for (const path of ["/ui", "/docs"]) {
      const response = await app.request(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("Content-Type")).toBe("text/html; charset=utf-8");
      expect(response.headers.get("Content-Security-Policy")).toBe(UI_CSP);
      expect(response.headers.get("X-Content-Type-Options")).toBe("nosniff");
    }
    expect(UI_CSP).toContain("default-src 'self'");
    expect(UI_CSP).toContain("script-src 'self';");
    expect(UI_CSP).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
  });

  test("each page runs no inline script and loads only files of its own origin, all of which are served", async () => {
    const { app } = await withUi();
    for (const path of ["/ui", "/docs"]) {
      const html = await (await app.request(path)).text();
      expect(html, path).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // every script has a src
      expect(html, path).not.toMatch(/\son[a-z]+=/i); // and no inline handler
      const files = referenced(html, path);
      expect(files.length, path).toBeGreaterThan(2);
      for (const file of files) {
        expect(file, path).toMatch(/^\/ui\//);
        const response = await app.request(file);
        expect(response.status, file).toBe(200);
        expect(response.headers.get("Content-Security-Policy"), file).toBe(UI_CSP);
      }
    }
  });

  test("/docs runs the pinned swagger-ui-dist, served from our origin byte for byte", async () => {
    const pinned = JSON.parse(readFileSync("package.json", "utf8")).dependencies["swagger-ui-dist"];
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/); // an exact version, no range
    const swaggerDir = createRequire(import.meta.url).resolve("swagger-ui-dist/package.json").replace(/package\.json$/, "");
    expect(JSON.parse(readFileSync(`${swaggerDir}package.json`, "utf8")).version).toBe(pinned);
    const { app } = await withUi();
    const html = await (await app.request("/docs")).text();
    expect(referenced(html, "/docs")).toContain("/ui/vendor/swagger-ui/swagger-ui-bundle.js");
    const bundle = await app.request("/ui/vendor/swagger-ui/swagger-ui-bundle.js");
    expect(bundle.headers.get("Content-Type")).toBe("text/javascript; charset=utf-8");
    expect(Buffer.from(await bundle.arrayBuffer()).equals(readFileSync(`${swaggerDir}swagger-ui-bundle.js`))).toBe(true);
  });

  test.each([
    ["a file that does not exist", "/ui/nope.js"],
    ["the folder's tsconfig", "/ui/tsconfig.json"],
    ["a file with no extension", "/ui/vendor/swagger-ui/LICENSE"],
    ["a step out of the folder", "/ui/%2e%2e/package.json"],
    ["an encoded slash", "/ui/vendor%2fswagger-ui%2fswagger-ui.css"],
    ["a folder", "/ui/vendor"],
  ])("%s is 404, nothing else of the disk is served", async (_, path) => {
    const { app } = await withUi();
    const response = await app.request(path);
    expect(response.status).toBe(404);
    expect(((await response.json()) as ErrorBody).error.code).toBe("route_not_found");
  });

  test("with auth off, a page from a foreign Host is refused like any call (DNS rebinding)", async () => {
    const { app } = await freshApp({ auth: "off", ui: uiFilesFromDisk() });
    expect((await app.request("http://127.0.0.1:8787/ui")).status).toBe(200);
    expect((await app.request("http://rebound.example:8787/ui")).status).toBe(403);
  });

  test("an app built without the files serves neither page", async () => {
    const { app } = await freshApp();
    expect((await app.request("/ui")).status).toBe(404);
    expect((await app.request("/docs")).status).toBe(404);
  });
});

describe("GET /", () => {
  const CHROME_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

  test("sends a browser to the dashboard, without a token", async () => {
    const { app } = await withUi();
    const response = await app.request("/", { headers: { Accept: CHROME_ACCEPT } });
    expect(response.status).toBe(302);
    expect(response.headers.get("Location")).toBe("/ui");
  });

  test.each([["curl's */*", "*/*"], ["JSON", "application/json"], ["no Accept at all", undefined]])("answers an API client (%s) a small index pointing to the OpenAPI document, without a token", async (_, accept) => {
    const { app } = await withUi();
    const response = await app.request("/", { headers: accept === undefined ? {} : { Accept: accept } });
    expect(response.status).toBe(200);
    const version = JSON.parse(readFileSync("package.json", "utf8")).version;
    expect(await response.json()).toEqual({ name: "fencelease", version, openapi: "/openapi.json", docs: "/docs", dashboard: "/ui", health: "/healthz" });
    expect((await app.request("/openapi.json")).status).toBe(200);
  });

  test("an app without the pages answers every caller the index, which names no page", async () => {
    const { app } = await freshApp();
    const response = await app.request("/", { headers: { Accept: CHROME_ACCEPT } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ name: "fencelease", version: expect.any(String), openapi: "/openapi.json", health: "/healthz" });
  });

  test("the OpenAPI document's version is the package's", async () => {
    const { call } = await freshApp();
    expect((await call("GET", "/openapi.json")).body.info.version).toBe(JSON.parse(readFileSync("package.json", "utf8")).version);
  });
});

describe("when a change to a file shows", () => {
  /** A dashboard folder of one page, whose text the test changes. */
  function folder(): { dir: string; write: (text: string) => void } {
    const dir = mkdtempSync(join(tmpdir(), "fencelease-ui-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const write = (text: string) => writeFileSync(join(dir, "index.html"), text);
    write("<p>first</p>");
    return { dir, write };
  }

  test("with tokens, each file is read once and served from memory: an edit shows after a restart", async () => {
    const { dir, write } = folder();
    const { app, store } = await freshApp({ ui: uiFilesFromDisk(dir) });
    expect(await (await app.request("/ui")).text()).toBe("<p>first</p>");
    write("<p>second</p>");
    expect(await (await app.request("/ui")).text()).toBe("<p>first</p>");
    const restarted = createApp({ store, auth: { tokens: [TOKEN] }, ui: uiFilesFromDisk(dir) });
    expect(await (await restarted.request("/ui")).text()).toBe("<p>second</p>");
  });

  test("with auth off (local development), an edit shows on the next reload, with a new ETag", async () => {
    const { dir, write } = folder();
    const { app } = await freshApp({ auth: "off", ui: uiFilesFromDisk(dir) });
    const first = await app.request("http://127.0.0.1:8787/ui");
    expect(await first.text()).toBe("<p>first</p>");
    expect((await app.request("http://127.0.0.1:8787/ui", { headers: { "If-None-Match": first.headers.get("ETag")! } })).status).toBe(304);
    write("<p>second</p>");
    const second = await app.request("http://127.0.0.1:8787/ui", { headers: { "If-None-Match": first.headers.get("ETag")! } });
    expect(second.status).toBe(200);
    expect(await second.text()).toBe("<p>second</p>");
  });
});
