import { describe, expect, test } from "vitest";
import { browserAndServer, fitsWidth, leave, signIn, visit, WAIT } from "./browser.ts";

// Cancel and progress on the dashboard in Chromium against a real Node server:
// a job's progress on its page, the Cancel button (asked first), the status
// cancelled in lists and the timeline, and the holder's writes refused after it.

const shared = browserAndServer();

describe("cancel and progress", () => {
  test.each([1280, 390])("at %i px a leased job shows its progress; Cancel job asks, cancels it on the server, and its holder's next write is refused", async (width) => {
    const { server } = shared;
    const id = `export-${width}`;
    await server.call("POST", "/v1/jobs", { id, queue: "exports" });
    await server.call("POST", `/v1/jobs/${id}/claim`, { owner: "A", ttlMs: 60_000 });
    await server.call("POST", `/v1/jobs/${id}/renew`, { owner: "A", fence: 1, ttlMs: 60_000, progress: { done: 40, of: 100 } });
    const visited = await visit(shared.browser, width);
    const { page } = visited;
    await signIn(page, server.url);
    await page.goto(`${server.url}/ui#/job/${id}`);
    await page.locator("h1 .status-leased").waitFor();
    expect(await page.locator("#progress").textContent()).toBe('{\n  "done": 40,\n  "of": 100\n}');
    expect(await page.locator("li.generation[data-fence='1'] .step").allTextContents()).toContain('+0 ms renewed, progress {"done":40,"of":100}');

    await page.getByRole("button", { name: "Cancel job", exact: true }).click();
    const dialog = page.getByRole("dialog");
    expect(await dialog.locator("p").textContent()).toContain("A holds it with fence 1");
    // Two buttons that say what each does: never "Cancel" beside "Cancel job".
    expect(await dialog.getByRole("button").allTextContents()).toEqual(["Keep the job", "Cancel job"]);
    await dialog.getByRole("button", { name: "Keep the job", exact: true }).click();
    expect((await server.call("GET", `/v1/jobs/${id}`)).status).toBe("leased"); // asked, and not cancelled

    await page.getByRole("button", { name: "Cancel job", exact: true }).click();
    await dialog.getByRole("button", { name: "Cancel job", exact: true }).click();
    await page.locator("h1 .status-cancelled").waitFor(WAIT);
    expect(await server.call("GET", `/v1/jobs/${id}`)).toMatchObject({ status: "cancelled", progress: { done: 40, of: 100 } });
    const { events } = await server.call("GET", `/v1/jobs/${id}/events`);
    expect(events.at(-1)).toMatchObject({ kind: "cancelled", owner: "dashboard" });
    expect(await page.locator("li.event.cancelled").textContent()).toMatch(/cancelled by dashboard$/);
    expect(await page.locator("li.generation[data-fence='1'] .verdict").textContent()).toBe("cancelled while it held the lease");
    expect(await page.getByRole("button", { name: "Cancel job", exact: true }).count()).toBe(0);

    const late = await server.call("POST", `/v1/jobs/${id}/complete`, { owner: "A", fence: 1, result: "too late" });
    expect(late.error).toMatchObject({ code: "stale_lease", details: { reason: "cancelled" } });
    await page.reload();
    await page.locator(".refusal .why").waitFor(WAIT);
    expect(await page.locator(".refusal .why").textContent()).toBe("The job had been cancelled: no lease may write to it any more.");
    expect(await fitsWidth(page)).toBe(true);
    await leave(visited, server.url);
  });

  test("cancelled jobs are a status in the jobs list and a count on the queues page", async () => {
    const { server } = shared;
    await server.call("POST", "/v1/jobs", { id: "mail-cancelled", queue: "mail-c" });
    await server.call("POST", "/v1/jobs", { id: "mail-kept", queue: "mail-c" });
    await server.call("POST", "/v1/jobs/mail-cancelled/cancel", { by: "ops", reason: "sent by hand" });
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, server.url);
    const count = page.locator("tr[data-queue=mail-c] td[data-stat=cancelled]");
    await expect.poll(() => count.textContent(), WAIT).toBe("1");
    await count.locator("a").click();
    await page.locator("table.jobs tr[data-id=mail-cancelled]").waitFor(WAIT);
    expect(await page.locator("#filter-status-cancelled").isChecked()).toBe(true);
    expect(await page.$$eval("table.jobs tr[data-id]", (rows) => rows.map((row) => row.getAttribute("data-id")))).toEqual(["mail-cancelled"]);
    expect(await page.locator("tr[data-id=mail-cancelled] .status-cancelled").textContent()).toBe("cancelled");
    await page.getByRole("link", { name: "mail-cancelled" }).click();
    await page.locator("li.event.cancelled").waitFor(WAIT);
    expect(await page.locator("li.event.cancelled").textContent()).toMatch(/cancelled by ops: sent by hand$/);
    expect(await page.locator("#progress").textContent()).toBe("none reported");
    await leave(visited, server.url);
  });

  test("a cancel of a job that was completed since the page loaded shows the API's refusal, and the job stays done", async () => {
    const { server } = shared;
    await server.call("POST", "/v1/jobs", { id: "done-meanwhile", queue: "reports" });
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, server.url);
    await page.goto(`${server.url}/ui#/job/done-meanwhile`);
    await page.locator("h1 .status-queued").waitFor();
    await server.call("POST", "/v1/jobs/done-meanwhile/claim", { owner: "C", ttlMs: 60_000 });
    await server.call("POST", "/v1/jobs/done-meanwhile/complete", { owner: "C", fence: 1, result: "ok" });

    await page.getByRole("button", { name: "Cancel job", exact: true }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Cancel job", exact: true }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), WAIT).toMatch(/\(409 conflict\)$/);
    expect((await server.call("GET", "/v1/jobs/done-meanwhile")).status).toBe("done");
    await leave(visited, server.url);
  });
});
