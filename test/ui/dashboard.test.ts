import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { fitsWidth, launchBrowser, leave, signIn, TOKEN, uiServer, type UiServer, visit, WAIT } from "./browser.ts";

// The dashboard in Chromium against a real Node server: sign-in, the queues
// page against GET /v1/stats, its refresh, and the jobs list. The job page is
// in ui-job.test.ts, /docs in ui-docs.test.ts.

let browser: Browser;
let server: UiServer;

beforeAll(async () => {
  [browser, server] = await Promise.all([launchBrowser(), uiServer()]);
  // Queues in every state: mail queued (one due for a minute), reports with a dead job, invoices with a refused write.
  await server.call("POST", "/v1/queues/mail/jobs", { jobs: Array.from({ length: 60 }, (_, i) => ({ id: `mail-${String(i).padStart(2, "0")}` })) });
  await server.call("POST", "/v1/jobs", { id: "mail-later", queue: "mail", delayMs: 3_600_000 });
  await server.call("POST", "/v1/jobs", { id: "report-1", queue: "reports", maxAttempts: 1 });
  await server.call("POST", "/v1/jobs/report-1/claim", { owner: "W", ttlMs: 10_000 });
  await server.call("POST", "/v1/jobs/report-1/fail", { owner: "W", error: "disk full", fence: 1 });
  await server.call("POST", "/v1/jobs", { id: "invoice-1", queue: "invoices" });
  await server.call("POST", "/v1/jobs/invoice-1/claim", { owner: "A", ttlMs: 10_000 });
  await server.call("POST", "/v1/jobs/invoice-1/complete", { owner: "Z", fence: 1, result: "not Z's" });
  server.clock.now += 61_000; // the mail jobs have been due for 61 s
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe("sign-in", () => {
  test("asks for the token; a wrong one is refused with the server's message; the right one opens the queues", async () => {
    const visited = await visit(browser);
    const { page } = visited;
    await page.goto(`${server.url}/ui`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.getByLabel("Token").fill("not-the-token");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), WAIT).toBe("That token was refused: the bearer token is not valid (or was revoked) (401 unauthorized)");

    await page.getByLabel("Token").fill(TOKEN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Queues" }).waitFor();
    // Kept for this tab only: sessionStorage, no cookie, nothing in localStorage.
    expect(await page.evaluate('[sessionStorage.getItem("fencelease.token"), localStorage.length, document.cookie]')).toEqual([TOKEN, 0, ""]);

    await page.reload();
    await page.getByRole("heading", { name: "Queues" }).waitFor(); // still signed in
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await leave(visited, server.url);
  });

  test("with auth off the page opens directly, and says auth is off, not what a token may do", async () => {
    const open = await uiServer("off");
    try {
      const visited = await visit(browser);
      await visited.page.goto(`${open.url}/ui`);
      await visited.page.getByRole("heading", { name: "Queues" }).waitFor();
      expect(await visited.page.locator("#session").textContent()).toBe("auth off");
      expect(await visited.page.locator("#abilities").textContent()).toBe("Auth is off (FENCELEASE_AUTH=off): no token is asked, and this page may do everything, from this machine only.");
      await leave(visited, open.url);
    } finally {
      await open.stop();
    }
  });
});

describe("queues", () => {
  test.each([1280, 390])("at %i px every number on the page is the one GET /v1/stats answers", async (width) => {
    const visited = await visit(browser, width);
    await signIn(visited.page, server.url);
    await visited.page.locator("tr[data-queue]").first().waitFor();
    const shown = await visited.page.$$eval("tr[data-queue]", (rows) =>
      rows.map((row) => ({
        queue: row.getAttribute("data-queue"),
        cells: Object.fromEntries([...row.querySelectorAll("td[data-stat]")].map((cell) => [cell.getAttribute("data-stat"), cell.textContent])),
        ageMs: row.querySelector("td[data-stat=oldestDueAgeMs]")?.getAttribute("data-ms"),
      })),
    );
    const { queues } = await server.call("GET", "/v1/stats");
    expect(queues.map((stats: { queue: string }) => stats.queue)).toEqual(["invoices", "mail", "reports"]);
    expect(shown).toEqual(queues.map((stats: any) => ({
      queue: stats.queue,
      cells: { ...mapValues(stats.jobs, String), oldestDueAgeMs: stats.oldestDueAgeMs === null ? "–" : "1 min 01 s", "refused.lastHour": String(stats.refused.lastHour), "refused.total": String(stats.refused.total) },
      ageMs: stats.oldestDueAgeMs === null ? "" : String(stats.oldestDueAgeMs),
    })));
    expect(queues.find((stats: { queue: string }) => stats.queue === "mail").oldestDueAgeMs).toBe(61_000);
    expect(await fitsWidth(visited.page)).toBe(true);
    await leave(visited, server.url);
  });

  test("they refresh by themselves every 3 s, and not while paused", async () => {
    const visited = await visit(browser);
    const { page } = visited;
    await page.clock.install(); // the page's timers run when the test says
    await signIn(page, server.url);
    const queued = page.locator("tr[data-queue=reports] td[data-stat=queued]");
    await expect.poll(() => queued.textContent(), WAIT).toBe("0");

    await server.call("POST", "/v1/jobs", { id: "report-2", queue: "reports" });
    await page.clock.runFor(3_000);
    await expect.poll(() => queued.textContent(), WAIT).toBe("1");

    await page.getByRole("button", { name: "Pause updates" }).click();
    const asked = visited.requests.length;
    await server.call("POST", "/v1/jobs", { id: "report-3", queue: "reports" });
    await page.clock.runFor(30_000);
    expect(visited.requests.length).toBe(asked); // no request while paused
    expect(await queued.textContent()).toBe("1");

    await page.getByRole("button", { name: "Resume updates" }).click(); // reads at once
    await expect.poll(() => queued.textContent(), WAIT).toBe("2");
    await leave(visited, server.url);
  });
});

describe("jobs", () => {
  test("a queue and status, keyset-paged 50 at a time, and a job found by its id", async () => {
    const visited = await visit(browser, 390);
    const { page } = visited;
    await signIn(page, server.url);
    await page.locator("tr[data-queue=mail] td[data-stat=queued] a").click();
    await page.getByRole("heading", { name: "Jobs" }).waitFor();
    const ids = () => page.$$eval("table.jobs tr[data-id]", (rows) => rows.map((row) => row.getAttribute("data-id")));
    await expect.poll(async () => (await ids()).length, WAIT).toBe(50);
    expect((await ids())[0]).toBe("mail-00");
    expect(await page.locator("#filter-status-queued").isChecked()).toBe(true);

    await page.getByRole("link", { name: "Next page »" }).click();
    await expect.poll(async () => (await ids()).at(0), WAIT).toBe("mail-50");
    expect(await ids()).toEqual(Array.from({ length: 10 }, (_, i) => `mail-${50 + i}`)); // the scheduled one is not queued
    expect(await page.getByRole("link", { name: "Next page »" }).count()).toBe(0);

    await page.locator("#filter-status-queued").click(); // each status ticked or unticked searches at once
    await expect.poll(async () => (await ids()).length, WAIT).toBe(50);
    await page.locator("#filter-status-scheduled").click();
    await expect.poll(ids, WAIT).toEqual(["mail-later"]);
    expect(await fitsWidth(page)).toBe(true);

    await page.getByLabel("Job id").fill("report-1");
    await page.getByRole("button", { name: "Open" }).click();
    await page.getByRole("heading", { name: /report-1/ }).waitFor();
    await page.goto(`${server.url}/ui#/job/no-such-job`);
    await page.getByRole("heading", { name: "No such job" }).waitFor();
    expect(await page.getByRole("alert").textContent()).toContain("(404 not_found)");
    await leave(visited, server.url);
  });
});

describe("a malformed link", () => {
  const bad = "#/job/%E0%A4%A"; // a % escape cut short: decodeURIComponent throws on it

  test("opened directly, the page says it is not a valid job link instead of staying at Loading…", async () => {
    const visited = await visit(browser);
    const { page } = visited;
    await signIn(page, server.url);
    await page.goto("about:blank"); // then a fresh load of the link, signed in (the token is this tab's)
    await page.goto(`${server.url}/ui${bad}`);
    await page.getByRole("heading", { name: "Not a valid job link" }).waitFor(WAIT);
    expect(await page.getByRole("alert").textContent()).toBe('"%E0%A4%A" is not a job id: one of its % escapes is cut short or malformed (each % starts one such as %20 or %C3%A9). Was the link cut when it was copied?');
    expect(await page.getByText("Loading…").count()).toBe(0);
    await leave(visited, server.url); // and no script threw
  });

  test("reached from the queues, it replaces them; back on the queues, they refresh again", async () => {
    await server.call("POST", "/v1/jobs", { id: "linked-1", queue: "linked" });
    const visited = await visit(browser);
    const { page } = visited;
    await page.clock.install(); // the page's timers run when the test says
    await signIn(page, server.url);
    const queued = page.locator("tr[data-queue=linked] td[data-stat=queued]");
    await expect.poll(() => queued.textContent(), WAIT).toBe("1");

    await page.evaluate(`location.hash = ${JSON.stringify(bad)}`);
    await page.getByRole("heading", { name: "Not a valid job link" }).waitFor(WAIT);
    expect(await page.getByRole("heading", { name: "Queues" }).count()).toBe(0);

    await page.getByRole("link", { name: "Queues" }).click();
    await expect.poll(() => queued.textContent(), WAIT).toBe("1");
    await server.call("POST", "/v1/jobs", { id: "linked-2", queue: "linked" });
    await page.clock.runFor(3_000);
    await expect.poll(() => queued.textContent(), WAIT).toBe("2");
    await leave(visited, server.url);
  });
});

function mapValues<T, U>(record: Record<string, T>, fn: (value: T) => U): Record<string, U> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, fn(value)]));
}
