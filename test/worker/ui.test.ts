import { SELF } from "cloudflare:test";
import { describe, expect, test } from "vitest";
import { UI_CSP } from "../../src/http/ui.ts";

// The Worker serves src/ui from its static assets (wrangler.toml's [assets]),
// through the same app routes and headers as the Node server (test/http/ui.test.ts).

const get = (path: string) => SELF.fetch(`https://fencelease.test${path}`);

describe("the Worker's dashboard and docs", () => {
  test.each([
    ["/ui", "text/html", 'src="ui/app.js"'],
    ["/ui/app.js", "text/javascript", "leave.abort()"],
    ["/ui/timeline.js", "text/javascript", "export function leaseHistory"],
    ["/ui/style.css", "text/css", ".refusals"],
    ["/docs", "text/html", 'src="ui/vendor/swagger-ui/swagger-ui-bundle.js"'],
    ["/ui/vendor/swagger-ui/swagger-ui-bundle.js", "text/javascript", "SwaggerUIBundle"],
  ])("%s is served from the assets without a token, with the strict policy", async (path, type, excerpt) => {
    const response = await get(path);
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toContain(type);
    expect(response.headers.get("Content-Security-Policy")).toBe(UI_CSP);
    expect(await response.text()).toContain(excerpt);
  });

  test("what is not a file of the dashboard is 404, the folder's tsconfig too", async () => {
    for (const path of ["/ui/nope.js", "/ui/tsconfig.json", "/ui/vendor/swagger-ui/LICENSE"]) {
      expect((await get(path)).status, path).toBe(404);
    }
  });

  test("the OpenAPI document that /docs renders is open; the API still needs the token", async () => {
    expect((await get("/openapi.json")).status).toBe(200);
    expect((await get("/v1/stats")).status).toBe(401);
  });
});

describe("the Worker's open files from memory", () => {
  test("swagger-ui's bundle has a strong ETag (304 on If-None-Match) and is gzipped for a client that takes gzip", async () => {
    const path = "/ui/vendor/swagger-ui/swagger-ui-bundle.js";
    const plain = await get(path);
    const text = await plain.text();
    const etag = plain.headers.get("ETag")!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect((await SELF.fetch(`https://fencelease.test${path}`, { headers: { "If-None-Match": etag } })).status).toBe(304);
    // "manual": the bytes as sent, not inflated by the runtime's fetch; once inflated they are the file (gzipped once, not twice).
    const zipped = await SELF.fetch(`https://fencelease.test${path}`, { headers: { "Accept-Encoding": "gzip" }, encodeResponseBody: "manual" });
    expect(zipped.headers.get("Content-Encoding")).toBe("gzip");
    const bytes = await zipped.arrayBuffer();
    expect(bytes.byteLength).toBeLessThan(text.length / 2);
    const inflated = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
    expect(inflated).toBe(text);
  });
});
