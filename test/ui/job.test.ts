import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { fitsWidth, launchBrowser, leave, signIn, uiServer, type UiServer, visit, WAIT } from "./browser.ts";

// A job's page in Chromium: the note's A/B race told as lease generations, and
// the actions. UI_SCREENSHOT=docs/job-timeline.png also saves the README's picture.

let browser: Browser;
let server: UiServer;

beforeAll(async () => {
  [browser, server] = await Promise.all([launchBrowser(), uiServer()]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** The note's story on job `id`: A's lease expires, B takes over and completes, A's late writes are refused. */
async function race(id: string) {
  const { call, clock } = server;
  await call("POST", "/v1/jobs", { id, queue: "invoices", payload: { amount: 120, currency: "EUR" } });
  clock.now += 20;
  await call("POST", `/v1/jobs/${id}/claim`, { owner: "A", ttlMs: 2_000 });
  clock.now += 700;
  await call("POST", `/v1/jobs/${id}/renew`, { owner: "A", fence: 1, ttlMs: 2_000 });
  clock.now += 2_300; // A stalls past its lease
  expect(await call("POST", `/v1/jobs/${id}/claim`, { owner: "B", ttlMs: 30_000 })).toMatchObject({ fence: 2 });
  clock.now += 150;
  await call("POST", `/v1/jobs/${id}/complete`, { owner: "B", fence: 2, result: { paidBy: "B" } });
  clock.now += 400;
  const late = await call("POST", `/v1/jobs/${id}/complete`, { owner: "A", fence: 1, result: { paidBy: "A" } });
  expect(late.error).toMatchObject({ code: "stale_lease", details: { currentFence: 2 } });
}

/** A job that failed its only attempt. */
async function dead(id: string) {
  await server.call("POST", "/v1/jobs", { id, queue: "reports", maxAttempts: 1 });
  await server.call("POST", `/v1/jobs/${id}/claim`, { owner: "W", ttlMs: 10_000 });
  expect((await server.call("POST", `/v1/jobs/${id}/fail`, { owner: "W", fence: 1, error: "disk full" })).job.status).toBe("dead");
}

describe("a job's history", () => {
  test.each([1280, 390])("at %i px, the refused stale write is shown beside the lease that beat it, presented against current", async (width) => {
    const id = width === 1280 ? "invoice-42" : "invoice-43"; // the README's picture shows the first
    await race(id);
    const visited = await visit(browser, width);
    const { page } = visited;
    await signIn(page, server.url);
    await page.goto(`${server.url}/ui#/job/${id}`);
    await page.locator(".timeline").waitFor();

    expect(await page.locator(".summary").textContent()).toBe("2 leases, fence 1 to 2. The stored result is from B with fence 2. 1 stale write was refused.");
    const first = page.locator("li.generation[data-fence='1']");
    const winner = page.locator("li.generation[data-fence='2']");
    expect(await first.locator(".lease-head").textContent()).toBe("fence 1Aexpired, then fence 2");
    expect(await first.locator(".step").allTextContents()).toEqual([
      "+20 ms claimed by A",
      "+720 ms renewed",
      "+3.02 s lease expired",
      "+3.57 s ✕ its complete came too late and was refused: fence 2 was current",
    ]);
    expect(await winner.locator(".lease-head").textContent()).toBe("fence 2Bcompleted: its result is stored");
    expect(await winner.locator(".step").allTextContents()).toEqual(["+3.02 s claimed by B", "+3.17 s completed"]);

    // The refusal sits in the winning generation, not in A's, with both sides of the comparison.
    expect(await first.locator(".refusal").count()).toBe(0);
    const refusal = winner.locator(".refusal");
    expect(await refusal.count()).toBe(1);
    expect(await refusal.locator(".what").textContent()).toBe("✕ complete by A +3.57 s");
    expect(await refusal.locator(".presented").textContent()).toBe("presentedAfence 1");
    expect(await refusal.locator(".holder").textContent()).toBe("currentBfence 2");
    expect(await refusal.locator(".why").textContent()).toBe("Fence 1 is older than fence 2: a newer lease had replaced it.");
    expect(await page.locator("pre.json").nth(1).textContent()).toBe('{\n  "paidBy": "B"\n}');

    // Beside it at 1280 px, below it at 390 px; either way nothing to scroll sideways.
    const [lease, aside] = [await winner.locator(".lease").boundingBox(), await refusal.boundingBox()];
    if (width === 1280) expect(aside!.x).toBeGreaterThan(lease!.x + lease!.width);
    else expect(aside!.y).toBeGreaterThan(lease!.y + lease!.height);
    expect(await fitsWidth(page)).toBe(true);

    if (width === 1280 && process.env.UI_SCREENSHOT) await page.screenshot({ path: process.env.UI_SCREENSHOT, fullPage: true });
    await leave(visited, server.url);
  });
});

describe("actions", () => {
  test("retry of a dead job: the button asks first, Cancel does nothing, Retry queues it again", async () => {
    await dead("report-dead");
    const visited = await visit(browser);
    const { page } = visited;
    await signIn(page, server.url);
    await page.goto(`${server.url}/ui#/job/report-dead`);
    await page.locator("h1 .status-dead").waitFor();

    await page.getByRole("button", { name: "Retry", exact: true }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
    expect((await server.call("GET", "/v1/jobs/report-dead")).status).toBe("dead");

    await page.getByRole("button", { name: "Retry", exact: true }).click();
    const dialog = page.getByRole("dialog");
    expect(await dialog.locator("p").textContent()).toContain("Its fence stays 1");
    await dialog.getByRole("button", { name: "Retry job" }).click();
    await page.locator("h1 .status-queued").waitFor();
    expect(await server.call("GET", "/v1/jobs/report-dead")).toMatchObject({ status: "queued", attempts: 0, fence: 1 });
    expect(await page.locator("li.event.retried").textContent()).toContain("retried: queued again with its attempts reset; the next claim gets fence 2");
    expect(await page.getByRole("button", { name: "Retry", exact: true }).count()).toBe(0); // not dead any more
    await leave(visited, server.url);
  });

  test("delete of a job someone claimed since the page loaded: the API's refusal is shown, the job stays", async () => {
    await server.call("POST", "/v1/jobs", { id: "taken-meanwhile", queue: "reports" });
    const visited = await visit(browser);
    const { page } = visited;
    await signIn(page, server.url);
    await page.goto(`${server.url}/ui#/job/taken-meanwhile`);
    await page.locator("h1 .status-queued").waitFor();
    await server.call("POST", "/v1/jobs/taken-meanwhile/claim", { owner: "C", ttlMs: 60_000 });

    await page.getByRole("button", { name: "Delete", exact: true }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete job" }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), WAIT)
      .toBe('job "taken-meanwhile" is leased; it can be deleted once its lease ends (409 conflict)');
    expect((await server.call("GET", "/v1/jobs/taken-meanwhile")).owner).toBe("C");

    await server.call("POST", "/v1/jobs/taken-meanwhile/release", { owner: "C", fence: 1 });
    await page.getByRole("button", { name: "Delete", exact: true }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete job" }).click();
    await page.getByRole("status").getByText("Deleted taken-meanwhile.").waitFor();
    expect((await server.call("GET", "/v1/jobs/taken-meanwhile")).error.code).toBe("not_found");
    await leave(visited, server.url);
  });
});
