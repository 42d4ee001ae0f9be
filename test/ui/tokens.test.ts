import { describe, expect, test } from "vitest";
import { browserAndServer, leave, signIn, visit, WAIT } from "./browser.ts";

// The dashboard signed in with tokens of each role, in Chromium against a real
// Node server: it says what the token may do, shows only its queues, and offers
// only the buttons the token may press.

const shared = browserAndServer();

/** The secret of a token made through the API with the test's admin token. */
async function tokenFor(role: string, queues: string[], name?: string): Promise<string> {
  return (await made(role, queues, name)).token;
}

/** A token made through the API with the test's admin token: its id and secret. */
async function made(role: string, queues: string[], name?: string): Promise<{ id: string; token: string }> {
  return shared.server.call("POST", "/v1/tokens", { role, queues, name });
}

/** invoices and mail, each with a dead job, and a schedule each. */
async function world() {
  const { server } = shared;
  for (const queue of ["invoices", "mail"]) {
    if ((await server.call("GET", `/v1/jobs/${queue}-dead`)).id) continue;
    await server.call("POST", "/v1/jobs", { id: `${queue}-dead`, queue, maxAttempts: 1 });
    await server.call("POST", `/v1/jobs/${queue}-dead/claim`, { owner: "W", ttlMs: 10_000 });
    await server.call("POST", `/v1/jobs/${queue}-dead/fail`, { owner: "W", fence: 1, error: "gone" });
    await server.call("PUT", `/v1/schedules/${queue}-nightly`, { queue, cron: "0 3 * * *" });
  }
}

/** The names of the buttons on the page now, but Sign out and Pause updates. */
async function buttons(page: import("playwright-core").Page): Promise<string[]> {
  const names = await page.$$eval("main button, header button", (found) => found.map((button) => button.getAttribute("aria-label") ?? button.textContent ?? ""));
  return names.filter((name) => !["Sign out", "Pause updates", "Resume updates"].includes(name));
}

describe("the dashboard and the signed-in token", () => {
  test("a reader for every queue sees every queue, job and schedule, and no button that changes anything", async () => {
    await world();
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, shared.server.url, await tokenFor("reader", ["*"], "wallboard"));
    expect(await page.locator("#signed-in-as").textContent()).toBe("reader for every queue");
    expect(await page.locator("#abilities").textContent()).toBe("This token (wallboard) is a reader for every queue: it may only read.");
    await page.locator('tr[data-queue="mail"]').waitFor();
    expect(await page.$$eval("tr[data-queue]", (rows) => rows.map((row) => row.getAttribute("data-queue")))).toEqual(["invoices", "mail"]);
    expect(await buttons(page)).toEqual([]);

    await page.goto(`${shared.server.url}/ui#/job/invoices-dead`);
    await page.getByRole("heading", { name: /Job invoices-dead/ }).waitFor();
    expect(await buttons(page)).toEqual([]);

    await page.goto(`${shared.server.url}/ui#/schedules`);
    await page.locator('tr[data-schedule="mail-nightly"]').waitFor();
    expect(await buttons(page)).toEqual([]);
    expect(await page.getByRole("heading", { name: "Put a schedule" }).count()).toBe(0);
    await leave(visited, shared.server.url);
  });

  test("a worker for invoices sees invoices only, says what it may do, and has no buttons: none of them is a worker's", async () => {
    await world();
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, shared.server.url, await tokenFor("worker", ["invoices"]));
    expect(await page.locator("#signed-in-as").textContent()).toBe("worker for invoices");
    expect(await page.locator("#abilities").textContent()).toBe("This token is a worker for the queue invoices: it may claim jobs and renew, complete, fail or release its leases, and read them; it changes nothing here.");
    await page.locator('tr[data-queue="invoices"]').waitFor();
    expect(await page.$$eval("tr[data-queue]", (rows) => rows.map((row) => row.getAttribute("data-queue")))).toEqual(["invoices"]);
    expect(await buttons(page)).toEqual([]);

    await page.goto(`${shared.server.url}/ui#/job/invoices-dead`);
    await page.getByRole("heading", { name: /Job invoices-dead/ }).waitFor();
    expect(await buttons(page)).toEqual([]);

    // A job of another queue is no job at all for this token.
    await page.goto(`${shared.server.url}/ui#/job/mail-dead`);
    await page.getByRole("heading", { name: "No such job" }).waitFor();
    expect(await page.getByRole("alert").textContent()).toBe('no job has the id "mail-dead" (404 not_found)');

    await page.goto(`${shared.server.url}/ui#/schedules`);
    await page.locator('tr[data-schedule="invoices-nightly"]').waitFor();
    expect(await page.$$eval("tr[data-schedule]", (rows) => rows.map((row) => row.getAttribute("data-schedule")))).toEqual(["invoices-nightly"]);
    expect(await buttons(page)).toEqual([]);
    await leave(visited, shared.server.url);
  });

  test("an admin for invoices has the buttons of invoices, and they work", async () => {
    await world();
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, shared.server.url, await tokenFor("admin", ["invoices"]));
    expect(await page.locator("#signed-in-as").textContent()).toBe("admin for invoices");
    await page.locator('tr[data-queue="invoices"]').waitFor();
    expect(await buttons(page)).toEqual(["New queue", "Pause queue invoices", "Settings of queue invoices", "Push of queue invoices"]);
    await page.getByRole("button", { name: "Pause queue invoices" }).click();
    await expect.poll(() => page.locator("#queue-note").textContent(), WAIT).toMatch(/^Paused invoices/);
    expect((await shared.server.call("GET", "/v1/queues/invoices")).paused).toBe(true);
    await shared.server.call("POST", "/v1/queues/invoices/resume");

    await page.goto(`${shared.server.url}/ui#/job/invoices-dead`);
    await page.getByRole("heading", { name: /Job invoices-dead/ }).waitFor();
    expect(await buttons(page)).toEqual(["Retry", "Delete"]);

    await page.goto(`${shared.server.url}/ui#/schedules`);
    await page.locator('tr[data-schedule="invoices-nightly"]').waitFor();
    expect(await buttons(page)).toEqual(["Delete schedule invoices-nightly", "Save schedule"]);
    await leave(visited, shared.server.url);
  });

  test("a token revoked while the page is open signs the page out at its next call", async () => {
    const visited = await visit(shared.browser);
    const { page } = visited;
    const { id, token } = await made("reader", ["*"]);
    await signIn(page, shared.server.url, token);
    await shared.server.call("DELETE", `/v1/tokens/${id}`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor(WAIT); // the queues refresh every 3 s
    expect(await page.getByRole("alert").textContent()).toBe("Signed out: the bearer token is not valid (or was revoked) (401 unauthorized)");
    await leave(visited, shared.server.url);
  });
});
