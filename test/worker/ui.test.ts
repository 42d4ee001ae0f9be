import { SELF } from "cloudflare:test";
import { describe, expect, test } from "vitest";
import { UI_CSP } from "../../src/http/ui.ts";

// The Worker serves src/ui from its static assets (wrangler.toml's [assets]),
// through the same app routes and headers as the Node server (test/http/ui.test.ts).

const get = (path: string) => SELF.fetch(`https://fencelease.test${path}`);

describe("the Worker's dashboard and docs", () => {
  test.each([
    ["/ui", "text/html", "/ui/app.js"],
    ["/ui/app.js", "text/javascript", "leave.abort()"],
    ["/ui/timeline.js", "text/javascript", "export function leaseHistory"],
    ["/ui/style.css", "text/css", ".refusals"],
    ["/docs", "text/html", "/ui/vendor/swagger-ui/swagger-ui-bundle.js"],
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
