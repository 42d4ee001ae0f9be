import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { fitsWidth, launchBrowser, leave, signIn, uiServer, type UiServer, visit, WAIT } from "./browser.ts";

// A job's page in Chromium: the note's A/B race told as lease generations, its
// header in each status, and the actions. UI_SCREENSHOT=docs/job-timeline.png
// also saves the README's picture, of the README's own story on a fresh server.

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
    const id = `invoice-race-${width}`;
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
    await leave(visited, server.url);
  });
});

describe("the README's picture", () => {
  test("the README's curl story on a fresh server: both leases, A's refused complete, the Progress panel, and every view in the nav", async () => {
    const fresh = await uiServer();
    try {
      // As the README's quick start sends it, a few ms between the commands and `sleep 2` where A stalls.
      const { call, clock } = fresh;
      await call("POST", "/v1/jobs", { id: "invoice-42", payload: { amount: 120 } });
      clock.now += 15;
      expect(await call("POST", "/v1/jobs/invoice-42/claim", { owner: "A", ttlMs: 2_000 })).toMatchObject({ fence: 1 });
      clock.now += 2_015;
      expect(await call("POST", "/v1/jobs/invoice-42/claim", { owner: "B", ttlMs: 30_000 })).toMatchObject({ fence: 2 });
      clock.now += 15;
      expect((await call("POST", "/v1/jobs/invoice-42/complete", { owner: "B", fence: 2, result: { paidBy: "B" } })).job).toMatchObject({ done: true });
      clock.now += 15;
      const late = await call("POST", "/v1/jobs/invoice-42/complete", { owner: "A", fence: 1, result: { paidBy: "A" } });
      expect(late.error).toMatchObject({ code: "stale_lease", details: { reason: "superseded", currentFence: 2 } });

      const visited = await visit(browser, 1200);
      const { page } = visited;
      await signIn(page, fresh.url);
      await page.goto(`${fresh.url}/ui#/job/invoice-42`);
      await page.locator(".timeline").waitFor(WAIT);
      expect(await page.getByRole("navigation", { name: "Sections" }).getByRole("link").allTextContents()).toEqual(["Queues", "Jobs", "Schedules", "API"]);
      expect(await header(page)).toMatchObject({ queue: "default", "completed by": "B, fence 2", result: '{"paidBy":"B"}', "error of an earlier attempt": "the lease of A expired" });
      expect(await page.locator(".summary").textContent()).toBe("2 leases, fence 1 to 2. The stored result is from B with fence 2. 1 stale write was refused.");
      expect(await page.locator("li.generation[data-fence='1'] .lease-head").textContent()).toBe("fence 1Aexpired, then fence 2");
      expect(await page.locator("li.generation[data-fence='2'] .lease-head").textContent()).toBe("fence 2Bcompleted: its result is stored");
      expect(await page.locator("li.generation[data-fence='2'] .refusal .what").textContent()).toBe("✕ complete by A +2.06 s");
      expect(await page.locator(".values h2").allTextContents()).toEqual(["Payload", "Result", "Progress"]);
      expect(await page.locator("pre.json").allTextContents()).toEqual(['{\n  "amount": 120\n}', '{\n  "paidBy": "B"\n}', "none reported"]);
      expect(await fitsWidth(page)).toBe(true);
      if (process.env.UI_SCREENSHOT) await page.screenshot({ path: process.env.UI_SCREENSHOT, fullPage: true });
      await leave(visited, fresh.url);
    } finally {
      await fresh.stop();
    }
  });
});

/** The header's fields as the page shows them, name to text, in order. */
async function header(page: Page): Promise<Record<string, string>> {
  const pairs = await page.$$eval("dl.fields > div", (rows) => rows.map((row) => [row.querySelector("dt")?.textContent, row.querySelector("dd")?.textContent]));
  return Object.fromEntries(pairs);
}

/** The instant a field's <time> stands for. */
const instant = (page: Page, field: string) => page.locator(`dd[data-field="${field}"] time`).getAttribute("datetime");

/** Opens the page of job `id`, signed in, once its status badge says `status`. */
async function openJob(id: string, status: string) {
  const visited = await visit(browser);
  await signIn(visited.page, server.url);
  await visited.page.goto(`${server.url}/ui#/job/${id}`);
  await visited.page.locator(`h1 .status-${status}`).waitFor(WAIT);
  return visited;
}

describe("the header says what is true of the job in its status", () => {
  test("done: when it completed, by whom with which fence, and its result; no lease until, and A's expiry only as an earlier attempt's error", async () => {
    await race("invoice-header");
    const job = await server.call("GET", "/v1/jobs/invoice-header");
    expect(job).toMatchObject({ status: "done", owner: "B", fence: 2, lastError: "the lease of A expired" });
    expect(job.until).toBeGreaterThan(server.clock.now); // what the page used to show as "lease until"
    const visited = await openJob("invoice-header", "done");
    const { page } = visited;
    expect(await header(page)).toEqual({
      queue: "invoices",
      completed: expect.any(String),
      "completed by": "B, fence 2",
      result: '{"paidBy":"B"}',
      attempts: "2 of 25",
      priority: "0",
      created: expect.any(String),
      "error of an earlier attempt": "the lease of A expired",
    });
    expect(await instant(page, "completed")).toBe(new Date(job.updatedAt).toISOString());
    expect(await instant(page, "created")).toBe(new Date(job.createdAt).toISOString());
    await leave(visited, server.url);
  });

  test("done with a long result: the header shows its start, the Result panel all of it", async () => {
    const long = { lines: Array.from({ length: 40 }, (_, i) => `line ${i}`) };
    await server.call("POST", "/v1/jobs", { id: "long-result", queue: "reports" });
    await server.call("POST", "/v1/jobs/long-result/claim", { owner: "W", ttlMs: 10_000 });
    await server.call("POST", "/v1/jobs/long-result/complete", { owner: "W", fence: 1, result: long });
    const visited = await openJob("long-result", "done");
    const shown = await header(visited.page);
    expect(shown.result).toBe(`${JSON.stringify(long).slice(0, 80)}… (all of it below)`);
    expect(shown).not.toHaveProperty("error of an earlier attempt"); // none: it completed on its first attempt
    expect(await visited.page.locator("pre.json").nth(1).textContent()).toBe(JSON.stringify(long, null, 2));
    await leave(visited, server.url);
  });

  test("dead: when it died, the last lease, and the error that ended it", async () => {
    await dead("report-died");
    const job = await server.call("GET", "/v1/jobs/report-died");
    const visited = await openJob("report-died", "dead");
    const { page } = visited;
    expect(await header(page)).toEqual({
      queue: "reports",
      died: expect.any(String),
      "last lease": "W, fence 1",
      "final error": "disk full",
      attempts: "1 of 1",
      priority: "0",
      created: expect.any(String),
    });
    expect(await instant(page, "died")).toBe(new Date(job.updatedAt).toISOString());
    // Its last lease ended in a failure: outlined as one, not in the green of a completed lease.
    const outline = (at: Page) => at.evaluate(`getComputedStyle(document.querySelector("li.generation[data-fence='1'] .lease")).borderTopColor`);
    expect(await page.locator("li.generation[data-fence='1'] .verdict").textContent()).toBe("dead");
    expect(await outline(page)).toBe("rgb(180, 35, 24)"); // --bad
    await leave(visited, server.url);
    await server.call("POST", "/v1/jobs", { id: "report-done", queue: "reports" });
    await server.call("POST", "/v1/jobs/report-done/claim", { owner: "W", ttlMs: 10_000 });
    await server.call("POST", "/v1/jobs/report-done/complete", { owner: "W", fence: 1, result: 1 });
    const done = await openJob("report-done", "done");
    expect(await outline(done.page)).toBe("rgb(29, 122, 70)"); // --ok
    await leave(done, server.url);
  });

  test.each([
    ["while A held it", true, "A, fence 1: its writes are refused"],
    ["while it waited", false, "none"],
  ])("cancelled %s: when, by whom and why, and the lease it had then", async (_, held, lease) => {
    const id = held ? "cancel-held" : "cancel-queued";
    await server.call("POST", "/v1/jobs", { id, queue: "exports" });
    if (held) await server.call("POST", `/v1/jobs/${id}/claim`, { owner: "A", ttlMs: 60_000 });
    server.clock.now += 1_000;
    await server.call("POST", `/v1/jobs/${id}/cancel`, { by: "ops", reason: "sent by hand" });
    const job = await server.call("GET", `/v1/jobs/${id}`);
    const visited = await openJob(id, "cancelled");
    const { page } = visited;
    expect(await header(page)).toEqual({
      queue: "exports",
      cancelled: expect.any(String),
      "cancelled by": "ops",
      reason: "sent by hand",
      "lease then": lease,
      attempts: `${held ? 1 : 0} of 25`,
      priority: "0",
      created: expect.any(String),
    });
    expect(await instant(page, "cancelled")).toBe(new Date(job.updatedAt).toISOString());
    await leave(visited, server.url);
  });

  test("leased: its lease and until when; an error of the attempt before is labelled as such", async () => {
    const { call, clock } = server;
    await call("POST", "/v1/jobs", { id: "taken-over", queue: "invoices" });
    await call("POST", "/v1/jobs/taken-over/claim", { owner: "A", ttlMs: 1_000 });
    clock.now += 1_500;
    const { until } = await call("POST", "/v1/jobs/taken-over/claim", { owner: "B", ttlMs: 30_000 });
    const visited = await openJob("taken-over", "leased");
    const { page } = visited;
    const shown = await header(page);
    expect(Object.keys(shown)).toEqual(["queue", "owner", "fence", "lease until", "due", "updated", "attempts", "priority", "created", "error of an earlier attempt"]);
    expect(shown).toMatchObject({ owner: "B", fence: "2", "error of an earlier attempt": "the lease of A expired" });
    expect(await instant(page, "lease until")).toBe(new Date(until).toISOString());
    await leave(visited, server.url);
  });

  test("queued after a failed attempt: when it is due, the fence so far, and the failure as an earlier attempt's", async () => {
    const { call } = server;
    await call("POST", "/v1/jobs", { id: "failed-once", queue: "reports" });
    await call("POST", "/v1/jobs/failed-once/claim", { owner: "W", ttlMs: 10_000 });
    await call("POST", "/v1/jobs/failed-once/fail", { owner: "W", fence: 1, error: "timeout", retryInMs: 0 });
    const visited = await openJob("failed-once", "queued");
    const shown = await header(visited.page);
    expect(Object.keys(shown)).toEqual(["queue", "due", "last fence", "updated", "attempts", "priority", "created", "error of an earlier attempt"]);
    expect(shown).toMatchObject({ "last fence": "1", "error of an earlier attempt": "timeout", attempts: "1 of 25" });
    await leave(visited, server.url);
  });
});

describe("at 390 px", () => {
  test("a long value of the payload wraps inside its panel: all of it shows, nothing past the panel's edge", async () => {
    const note = "a note that goes on and on, longer than a phone is wide, and ends here";
    await server.call("POST", "/v1/jobs", { id: "long-note", queue: "notes", payload: { note, url: `https://example.com/${"x".repeat(80)}` } });
    const visited = await visit(browser, 390);
    await signIn(visited.page, server.url);
    await visited.page.goto(`${server.url}/ui#/job/long-note`);
    await visited.page.locator("h1 .status-queued").waitFor(WAIT);
    const panels = await visited.page.evaluate(`[...document.querySelectorAll("pre.json")].map((pre) => [pre.scrollWidth, pre.clientWidth])`) as [number, number][];
    expect(panels.length).toBeGreaterThan(0);
    for (const [scrollWidth, clientWidth] of panels) expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
    expect(await visited.page.locator("pre.json").first().textContent()).toContain(note);
    expect(await fitsWidth(visited.page)).toBe(true);
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
