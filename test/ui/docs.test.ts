import { readFileSync } from "node:fs";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchBrowser, leave, signIn, uiServer, type UiServer, visit, type Visit, WAIT } from "./browser.ts";

// /docs in Chromium with no internet: swagger-ui comes from our own origin.

let browser: Browser;
let server: UiServer;

beforeAll(async () => {
  [browser, server] = await Promise.all([launchBrowser(), uiServer()]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** Cuts the page off from every origin but the server's, as a machine without internet would be. */
async function offline(visited: Visit): Promise<void> {
  const origin = new URL(server.url).origin;
  await visited.context.route("**/*", (route) => (new URL(route.request().url()).origin === origin ? route.continue() : route.abort("internetdisconnected")));
}

describe("/docs", () => {
  test("renders every operation of the API with no internet, asking only our origin, under the strict policy", async () => {
    const visited = await visit(browser);
    await offline(visited);
    const { page } = visited;
    await page.goto(`${server.url}/docs`);
    await page.locator(".opblock-summary").first().waitFor();

    const document = await server.call("GET", "/openapi.json");
    const operations = Object.entries(document.paths as Record<string, object>).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
    expect(operations.length).toBeGreaterThan(15);
    const shown = await page.$$eval(".opblock-summary", (blocks) => blocks.map((block) =>
      `${block.querySelector(".opblock-summary-method")?.textContent} ${block.querySelector(".opblock-summary-path")?.getAttribute("data-path")}`));
    expect(shown.sort()).toEqual(operations.sort());
    expect(await page.locator(".info .title").textContent()).toContain("fencelease");
    // Grouped by resource, not all under "default", and the version is the package's.
    expect(await page.$$eval(".opblock-tag", (tags) => tags.map((tag) => tag.getAttribute("data-tag")))).toEqual(["jobs", "leases", "queues", "push", "schedules", "tokens", "system"]);
    expect((await page.locator(".info .title .version").first().textContent())?.trim()).toBe(JSON.parse(readFileSync("package.json", "utf8")).version);
    await leave(visited, server.url);
  });

  test("Try it out sends the token the dashboard keeps for the tab", async () => {
    const visited = await visit(browser);
    await offline(visited);
    const { page } = visited;
    await signIn(page, server.url);
    await page.goto(`${server.url}/docs`);
    const stats = page.locator("#operations-queues-getStats");
    await stats.locator(".opblock-summary").click();
    await stats.getByRole("button", { name: "Try it out" }).click();
    await stats.getByRole("button", { name: "Execute" }).click();
    await expect.poll(() => stats.locator(".live-responses-table tbody .response-col_status").textContent(), WAIT).toBe("200");
    await leave(visited, server.url);
  });
});
