import type { Page } from "playwright-core";
import { describe, expect, test } from "vitest";
import { browserAndServer, fitsWidth, leave, signIn, uiServer, type UiServer, visit, WAIT } from "./browser.ts";

// The Jobs view's search and bulk actions in Chromium against a real Node
// server: the filters kept in the URL, pages that stop at their bound, a bulk
// retry of all the jobs a search finds and of the rows ticked, each asked first
// with its count, and no bulk button for a token that may not manage.
// UI_SCREENSHOT_SEARCH=docs/search.png also saves docs/dashboard.md's picture.

const shared = browserAndServer();

/** Enqueues `id` in `queue`; with `error`, fails it on its only attempt, so that it is dead with that error. */
async function job(server: UiServer, id: string, queue: string, error?: string): Promise<void> {
  await server.call("POST", "/v1/jobs", { id, queue, maxAttempts: 1 });
  if (error === undefined) return;
  await server.call("POST", `/v1/jobs/${id}/claim`, { owner: "W", ttlMs: 10_000 });
  await server.call("POST", `/v1/jobs/${id}/fail`, { owner: "W", fence: 1, error });
}

/** Invoices and a mail job: four dead of a timeout (three invoices), one dead of a declined card, one queued. */
async function world(server: UiServer, tag: string): Promise<void> {
  for (const n of [1, 2, 3]) await job(server, `${tag}-inv-${n}`, `${tag}-invoices`, "gateway timeout after 30 s");
  await job(server, `${tag}-inv-4`, `${tag}-invoices`, "card declined");
  await job(server, `${tag}-inv-10`, `${tag}-invoices`);
  await job(server, `${tag}-mail-1`, `${tag}-mail`, "smtp timeout");
}

/** The ids of the rows listed now. */
const ids = (page: Page) => page.$$eval("table.jobs tr[data-id]", (rows) => rows.map((row) => row.getAttribute("data-id")));

/** The status of each of `names` on the server. */
async function statuses(server: UiServer, names: string[]): Promise<string[]> {
  return Promise.all(names.map(async (id) => (await server.call("GET", `/v1/jobs/${id}`)).status));
}

describe("search", () => {
  test.each([1280, 390])("at %i px an id prefix and an error text find exactly their jobs, and the URL keeps the search through a reload", async (width) => {
    const { server } = shared;
    const tag = `s${width}`;
    await world(server, tag);
    const visited = await visit(shared.browser, width);
    const { page } = visited;
    await signIn(page, server.url);
    await page.getByRole("link", { name: "Jobs", exact: true }).click();
    await page.getByLabel("Id starts with").fill(`${tag}-inv-1`);
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await expect.poll(() => ids(page), WAIT).toEqual([`${tag}-inv-1`, `${tag}-inv-10`]);
    expect(new URL(page.url()).hash).toBe(`#/jobs?idPrefix=${tag}-inv-1`);

    await page.getByLabel("Id starts with").fill("");
    await page.getByLabel("Error contains").fill("timeout");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    const timedOut = [1, 2, 3].map((n) => `${tag}-inv-${n}`);
    await expect.poll(async () => (await ids(page)).filter((id) => id!.startsWith(tag)), WAIT).toEqual([...timedOut, `${tag}-mail-1`]);
    await page.locator("#filter-queue").selectOption(`${tag}-invoices`); // searches at once
    await expect.poll(() => ids(page), WAIT).toEqual(timedOut);
    expect(new URL(page.url()).hash).toBe(`#/jobs?queue=${tag}-invoices&error=timeout`);

    await page.reload();
    await expect.poll(() => ids(page), WAIT).toEqual(timedOut);
    expect(await page.getByLabel("Error contains").inputValue()).toBe("timeout");
    expect(await page.locator("#filter-queue").inputValue()).toBe(`${tag}-invoices`);
    expect(await fitsWidth(page)).toBe(true);
    await leave(visited, server.url);
  });

  test("times are the reader's: a created range typed in the form is kept as its instants, and a range that ends before it starts is the API's 400, the form kept", async () => {
    const { server } = shared;
    await job(server, "timed-1", "timed");
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, server.url);
    await page.goto(`${server.url}/ui#/jobs?queue=timed`);
    await expect.poll(() => ids(page), WAIT).toEqual(["timed-1"]);
    // The server's clock reads T, 2026-11-30 09:00 UTC; the browser's zone is the machine's.
    const local = await page.evaluate(`(() => { const d = new Date(${server.clock.now}); const p = (n) => String(n).padStart(2, "0"); return d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + "T" + p(d.getHours()) + ":" + p(d.getMinutes()); })()`) as string;
    await page.getByLabel("Created from").fill(local);
    await page.getByLabel("Created to").fill(local);
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await expect.poll(() => new URL(page.url()).hash, WAIT).toBe(`#/jobs?queue=timed&createdFrom=${server.clock.now}&createdTo=${server.clock.now + 59_999}`);
    await expect.poll(() => ids(page), WAIT).toEqual(["timed-1"]);
    expect(await page.getByLabel("Created to").inputValue()).toBe(local);

    await page.goto(`${server.url}/ui#/jobs?createdFrom=2000&createdTo=1000`);
    await expect.poll(() => page.getByRole("alert").textContent(), WAIT).toMatch(/createdTo.*\(400 invalid_request\)$/);
    expect(await page.getByRole("search", { name: "Search jobs" }).count()).toBe(1);
    await leave(visited, server.url);
  });

  test("a page that stops at the 20,000 jobs it may look at still offers Next, and says more may follow; a bulk cancel of all matching goes on call after call until Stop", async () => {
    const fresh = await uiServer();
    try {
      for (let batch = 0; batch < 21; batch++) {
        const jobs = Array.from({ length: 1_000 }, (_, i) => ({ id: `common-${String(batch * 1_000 + i).padStart(5, "0")}` }));
        await fresh.call("POST", "/v1/queues/common/jobs", { jobs });
      }
      await fresh.call("POST", "/v1/jobs", { id: "rare-1", queue: "rare" }); // after every common id
      const visited = await visit(shared.browser, 390);
      const { page } = visited;
      await signIn(page, fresh.url);
      await page.goto(`${fresh.url}/ui#/jobs?queue=rare`);
      await page.locator("#more-may-follow").waitFor(WAIT);
      expect(await page.locator("#more-may-follow").textContent()).toBe("This page stopped at the 20,000 jobs a page looks at: more may follow on the next page.");
      expect(await page.getByText("No job matches among those this page looked at.").count()).toBe(1);
      await page.getByRole("link", { name: "Next page »" }).click();
      await expect.poll(() => ids(page), WAIT).toEqual(["rare-1"]);
      expect(await page.locator("#more-may-follow").count()).toBe(0);
      expect(await page.getByRole("link", { name: "Next page »" }).count()).toBe(0);

      await page.goto(`${fresh.url}/ui#/jobs?queue=common`);
      await page.getByLabel("All matching this search").check();
      await page.getByRole("button", { name: "Cancel jobs", exact: true }).click();
      const dialog = page.getByRole("dialog");
      expect(await dialog.locator("h2").textContent(WAIT)).toBe("Cancel 21,000 jobs?"); // counted in 3 dry runs of 10,000
      await dialog.getByRole("button", { name: "Cancel 21,000 jobs" }).click();
      await expect.poll(() => page.locator(".bulk-progress span").textContent(), WAIT).toMatch(/^Cancelling: [1-9]\d* calls?, [1-9][\d,]* changed so far$/);
      await page.getByRole("button", { name: "Stop", exact: true }).click();
      const said = /^Cancelled: ([\d,]+) matched, \1 changed, 0 skipped\. Stopped after (\d+) calls?: the rest was not touched\.$/.exec(await page.locator("#bulk-outcome").textContent(WAIT) ?? "");
      expect(said).not.toBeNull();
      const [changed, calls] = [Number(said![1]!.replaceAll(",", "")), Number(said![2])];
      expect(changed).toBe(calls * 1_000);
      expect(changed).toBeLessThan(21_000);
      const { queues } = await fresh.call("GET", "/v1/stats");
      expect(queues.find((stats: { queue: string }) => stats.queue === "common").jobs).toMatchObject({ cancelled: changed, queued: 21_000 - changed });
      await leave(visited, fresh.url);
    } finally {
      await fresh.stop();
    }
  }, 120_000);
});

describe("bulk actions", () => {
  test("a retry of all the dead jobs a search finds asks first with the server's count, retries them on the server, and shows the outcome", async () => {
    const { server } = shared;
    await world(server, "b");
    const visited = await visit(shared.browser, 1200);
    const { page } = visited;
    await signIn(page, server.url);
    await page.goto(`${server.url}/ui#/jobs?status=dead&idPrefix=b-&error=timeout`);
    const found = ["b-inv-1", "b-inv-2", "b-inv-3", "b-mail-1"];
    await expect.poll(() => ids(page), WAIT).toEqual(found);
    expect(await page.locator("#filter-status-dead").isChecked()).toBe(true);
    await page.getByLabel("All matching this search").check();
    expect(await page.locator(".selected-count").textContent()).toBe("every job that matches this search");
    if (process.env.UI_SCREENSHOT_SEARCH) await page.screenshot({ path: process.env.UI_SCREENSHOT_SEARCH, fullPage: true });

    await page.getByRole("button", { name: "Retry", exact: true }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor(WAIT);
    expect(await dialog.locator("h2").textContent()).toBe("Retry 4 jobs?");
    expect(await dialog.locator("p").textContent()).toBe("4 jobs that match this search are dead, as the server counts them now: each goes back to its queue at once with its attempts reset; its fence stays, so no old lease can write to it. A job that changes status meanwhile is skipped, never forced.");
    expect(await dialog.getByRole("button").allTextContents()).toEqual(["Cancel", "Retry 4 jobs"]);
    await dialog.getByRole("button", { name: "Cancel", exact: true }).click();
    expect(await statuses(server, found)).toEqual(["dead", "dead", "dead", "dead"]); // asked, and not retried

    await page.getByRole("button", { name: "Retry", exact: true }).click();
    await dialog.getByRole("button", { name: "Retry 4 jobs" }).click();
    await page.locator("#bulk-outcome").waitFor(WAIT);
    expect(await page.locator("#bulk-outcome").textContent()).toBe("Retried: 4 matched, 4 changed, 0 skipped.");
    expect(await statuses(server, [...found, "b-inv-4"])).toEqual(["queued", "queued", "queued", "queued", "dead"]);
    await expect.poll(() => page.getByText("No jobs match.").count(), WAIT).toBe(1); // the list read again
    await leave(visited, server.url);
  });

  test("a retry of the rows ticked calls each job's own retry, skips the ticked job it does not take, and counts both", async () => {
    const { server } = shared;
    await world(server, "t");
    const visited = await visit(shared.browser, 390);
    const { page } = visited;
    await signIn(page, server.url);
    await page.goto(`${server.url}/ui#/jobs?queue=t-invoices`);
    await expect.poll(() => ids(page), WAIT).toEqual(["t-inv-1", "t-inv-10", "t-inv-2", "t-inv-3", "t-inv-4"]);
    expect(await page.getByRole("button", { name: "Retry", exact: true }).isDisabled()).toBe(true); // nothing ticked yet
    await page.getByLabel("Select t-inv-4").check();
    await page.getByLabel("Select t-inv-10").check();
    expect(await page.locator(".selected-count").textContent()).toBe("2 selected");

    await page.getByRole("button", { name: "Retry", exact: true }).click();
    const dialog = page.getByRole("dialog");
    expect(await dialog.locator("p").textContent()).toBe("1 of the 2 jobs selected: 1 dead. Each goes back to its queue at once with its attempts reset; its fence stays, so no old lease can write to it. The other 1 (1 queued) is skipped: one by one, retry takes dead jobs.");
    await dialog.getByRole("button", { name: "Retry 1 job" }).click();
    await page.locator("#bulk-outcome").waitFor(WAIT);
    expect(await page.locator("#bulk-outcome").textContent()).toBe("Retried: 2 selected, 1 changed, 1 skipped (1 not dead).");
    expect(await statuses(server, ["t-inv-4", "t-inv-10", "t-inv-1"])).toEqual(["queued", "queued", "dead"]);
    await expect.poll(() => page.locator("tr[data-id=t-inv-4] .status").textContent(), WAIT).toBe("queued");

    await page.getByLabel("All on this page").check();
    expect(await page.locator(".selected-count").textContent()).toBe("5 selected");
    await page.getByRole("button", { name: "Cancel jobs", exact: true }).click();
    expect(await dialog.getByRole("button").allTextContents()).toEqual(["Keep the jobs", "Cancel 2 jobs"]);
    await dialog.getByRole("button", { name: "Keep the jobs" }).click();
    expect(await statuses(server, ["t-inv-4", "t-inv-10"])).toEqual(["queued", "queued"]);
    expect(await fitsWidth(page)).toBe(true);
    await leave(visited, server.url);
  });

  test("a reader's token sees the search and no bulk control", async () => {
    const { server } = shared;
    await world(server, "r");
    const { token } = await server.call("POST", "/v1/tokens", { role: "reader", queues: ["*"] });
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, server.url, token);
    await page.goto(`${server.url}/ui#/jobs?idPrefix=r-`);
    await expect.poll(() => ids(page), WAIT).toEqual(["r-inv-1", "r-inv-10", "r-inv-2", "r-inv-3", "r-inv-4", "r-mail-1"]);
    expect(await page.$$eval("main button", (found) => found.map((button) => button.textContent))).toEqual(["Open", "Search"]);
    expect(await page.locator("input.pick, #select-page, #select-matching").count()).toBe(0);
    await leave(visited, server.url);
  });
});
