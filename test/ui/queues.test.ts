import type { Locator } from "playwright-core";
import { describe, expect, test } from "vitest";
import { browserAndServer, fitsWidth, leave, signIn, visit, WAIT } from "./browser.ts";
import { NO_KEY_LIMITS } from "../contract/queues.contract.ts";

// The queue controls of the dashboard in Chromium against a real Node server:
// each click is checked on the page and in the server's state.

const shared = browserAndServer();

/** A fresh queue name per test, with `count` jobs due now, so the tests share a server and not their queues. */
async function queueWithJobs(queue: string, count: number): Promise<string> {
  await shared.server.call("POST", `/v1/queues/${queue}/jobs`, { jobs: Array.from({ length: count }, (_, i) => ({ id: `${queue}-${i}` })) });
  return queue;
}

/** The hint of each field of the settings dialog, by the field's id. */
async function hints(dialog: Locator): Promise<Record<string, string>> {
  const pairs = await dialog.locator("input[aria-describedby]").evaluateAll((inputs) =>
    inputs.map((input) => [input.id, input.ownerDocument.getElementById(input.getAttribute("aria-describedby") ?? "")?.textContent]));
  return Object.fromEntries(pairs);
}

/** The dashboard, signed in, with the settings dialog of `queue` opened from its row. */
async function settingsDialogOf(queue: string) {
  const visited = await visit(shared.browser);
  await signIn(visited.page, shared.server.url);
  await visited.page.getByRole("button", { name: `Settings of queue ${queue}` }).click();
  return { visited, page: visited.page, dialog: visited.page.getByRole("dialog", { name: `Settings of queue ${queue}` }) };
}

describe("queue controls", () => {
  test("Pause on a queue's row pauses it on the server, claims take nothing, and Resume starts it again", async () => {
    const mail = await queueWithJobs("mail", 2);
    const zip = await queueWithJobs("zip", 1);
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, shared.server.url);
    const state = page.locator("tr[data-queue=mail] td[data-setting=paused]");
    await expect.poll(() => state.textContent(), WAIT).toBe("running");

    await page.getByRole("button", { name: "Pause queue mail" }).click();
    await expect.poll(() => state.textContent(), WAIT).toBe("paused");
    expect(await page.locator("#queue-note").textContent()).toBe("Paused mail: claims take none of its jobs until it is resumed; leases held go on.");
    expect(await shared.server.call("GET", `/v1/queues/${mail}`)).toEqual({ queue: mail, paused: true, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect(await shared.server.call("GET", `/v1/queues/${zip}`)).toEqual({ queue: zip, paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS }); // the bystander
    expect(await shared.server.call("POST", `/v1/queues/${mail}/claim`, { owner: "A", ttlMs: 10_000 })).toEqual({ leases: [] });
    expect(await page.getByRole("button", { name: "Pause queue mail" }).count()).toBe(0);

    await page.getByRole("button", { name: "Resume queue mail" }).click();
    await expect.poll(() => state.textContent(), WAIT).toBe("running");
    expect(await shared.server.call("GET", `/v1/queues/${mail}`)).toEqual({ queue: mail, paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect((await shared.server.call("POST", `/v1/queues/${mail}/claim`, { owner: "A", ttlMs: 10_000 })).leases).toHaveLength(1);
    await leave(visited, shared.server.url);
  });

  test("at 1024 px a queue with every limit set, paused, fits the page: its limits and buttons wrap, and the table scrolls in its own box", async () => {
    const wide = await queueWithJobs("wide", 1);
    await shared.server.call("PUT", `/v1/queues/${wide}`, { maxLeased: 1000, ratePerSecond: 1000, burst: 1000 });
    await shared.server.call("POST", `/v1/queues/${wide}/pause`);
    const visited = await visit(shared.browser, 1024);
    const { page } = visited;
    await signIn(page, shared.server.url);
    await expect.poll(() => page.locator(`tr[data-queue=${wide}] td[data-setting=limits]`).textContent(), WAIT).toContain("1000/s");
    expect(await fitsWidth(page)).toBe(true);
    await leave(visited, shared.server.url);
  });

  test("at 390 px the page has no settings form; a queue's Settings opens its own, filled in, with hints; Save replaces them, Cancel changes nothing", async () => {
    const reports = await queueWithJobs("reports", 1);
    await shared.server.call("PUT", `/v1/queues/${reports}`, { maxLeased: 2, ratePerSecond: 2.5, burst: 10 });
    const visited = await visit(shared.browser, 390);
    const { page } = visited;
    await signIn(page, shared.server.url);
    const limits = page.locator(`tr[data-queue=${reports}] td[data-setting=limits]`);
    await expect.poll(() => limits.textContent(), WAIT).toBe("max leased 2, 2.5/s burst 10");
    expect(await page.locator("form, input").count()).toBe(0); // nothing to fill in until a queue is chosen

    await page.getByRole("button", { name: `Settings of queue ${reports}` }).click();
    const dialog = page.getByRole("dialog", { name: `Settings of queue ${reports}` });
    await dialog.waitFor(WAIT);
    expect(await dialog.getByLabel("Max leased").inputValue()).toBe("2");
    expect(await dialog.getByLabel("Claims per second").inputValue()).toBe("2.5");
    expect(await dialog.getByLabel("Burst").inputValue()).toBe("10");
    expect(await dialog.getByLabel("Queue name").count()).toBe(0); // the queue is the one whose row it is
    // Each field says what it does, in words (its aria-describedby).
    expect(await hints(dialog)).toEqual({
      "settings-max-leased": "The most of its jobs workers may hold at once. Empty: no limit.",
      "settings-rate": "How many of its jobs workers may take per second, all of them together. Empty: no limit.",
      "settings-burst": "How many may be taken at once after a quiet spell; needs claims per second. Empty: the rate, rounded up.",
    });
    expect(await fitsWidth(page)).toBe(true);

    await dialog.getByLabel("Max leased").fill("");
    await dialog.getByRole("button", { name: "Save settings" }).click();
    await dialog.waitFor({ state: "detached", ...WAIT });
    await expect.poll(() => limits.textContent(), WAIT).toBe("2.5/s burst 10");
    expect(await page.locator("#queue-note").textContent()).toBe(`Saved ${reports}: 2.5/s burst 10.`);
    expect(await shared.server.call("GET", `/v1/queues/${reports}`)).toEqual({ queue: reports, paused: false, maxLeased: null, ratePerSecond: 2.5, burst: 10, ...NO_KEY_LIMITS });

    await page.getByRole("button", { name: `Settings of queue ${reports}` }).click();
    expect(await dialog.getByLabel("Max leased").inputValue()).toBe(""); // filled with what it is now
    await dialog.getByLabel("Claims per second").fill("7");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached", ...WAIT });
    expect(await shared.server.call("GET", `/v1/queues/${reports}`)).toEqual({ queue: reports, paused: false, maxLeased: null, ratePerSecond: 2.5, burst: 10, ...NO_KEY_LIMITS });
    await leave(visited, shared.server.url);
  });

  test("saving a queue's limits in the dialog keeps the settings of its keys, which the dialog does not show", async () => {
    const tenants = await queueWithJobs("tenants", 1);
    const keyed = { maxLeasedPerKey: 2, keyRatePerSecond: 5, keyBurst: 8, orderedByKey: true, fairByKey: true };
    await shared.server.call("PUT", `/v1/queues/${tenants}`, { maxLeased: 3, ...keyed });
    const { visited, page, dialog } = await settingsDialogOf(tenants);
    await dialog.getByLabel("Max leased").fill("6");
    await dialog.getByRole("button", { name: "Save settings" }).click();
    await dialog.waitFor({ state: "detached", ...WAIT });
    await expect.poll(() => page.locator(`tr[data-queue=${tenants}] td[data-setting=limits]`).textContent(), WAIT).toBe("max leased 6");
    expect(await shared.server.call("GET", `/v1/queues/${tenants}`)).toEqual({ queue: tenants, paused: false, maxLeased: 6, ratePerSecond: null, burst: null, ...keyed });
    await leave(visited, shared.server.url);
  });

  test("New queue sets the limits of a queue that has no jobs yet; it is listed with zero counts", async () => {
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, shared.server.url);
    await page.getByRole("button", { name: "New queue" }).click();
    const dialog = page.getByRole("dialog", { name: "Settings of a new queue" });
    await dialog.waitFor(WAIT);
    expect(await page.evaluate("document.activeElement.id")).toBe("settings-queue"); // the name comes first
    expect(await dialog.getByLabel("Max leased").inputValue()).toBe("");
    expect(await hints(dialog)).toMatchObject({ "settings-queue": "A queue with no jobs yet is listed once saved; a queue that exists gets these limits in place of its own." });
    await dialog.getByLabel("Queue name").fill("exports");
    await dialog.getByLabel("Max leased").fill("3");
    await dialog.getByRole("button", { name: "Save settings" }).click();
    await dialog.waitFor({ state: "detached", ...WAIT });
    await expect.poll(() => page.locator("tr[data-queue=exports] td[data-setting=limits]").textContent(), WAIT).toBe("max leased 3");
    expect(await page.locator("tr[data-queue=exports] td[data-stat=queued]").textContent()).toBe("0");
    expect(await shared.server.call("GET", "/v1/queues/exports")).toEqual({ queue: "exports", paused: false, maxLeased: 3, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    await leave(visited, shared.server.url);
  });

  test("the dialog sets a rate limit with its burst beside maxLeased; a burst without a rate is refused by the API, shown in the dialog, which stays open", async () => {
    const bulk = await queueWithJobs("bulk", 1);
    const { visited, page, dialog } = await settingsDialogOf(bulk);
    await dialog.getByLabel("Max leased").fill("4");
    await dialog.getByLabel("Claims per second").fill("2.5");
    await dialog.getByLabel("Burst").fill("10");
    await dialog.getByRole("button", { name: "Save settings" }).click();
    const limits = page.locator(`tr[data-queue=${bulk}] td[data-setting=limits]`);
    await expect.poll(() => limits.textContent(), WAIT).toBe("max leased 4, 2.5/s burst 10");
    expect(await shared.server.call("GET", `/v1/queues/${bulk}`)).toEqual({ queue: bulk, paused: false, maxLeased: 4, ratePerSecond: 2.5, burst: 10, ...NO_KEY_LIMITS });

    await page.getByRole("button", { name: `Settings of queue ${bulk}` }).click();
    await dialog.getByLabel("Claims per second").fill("");
    await dialog.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => dialog.getByRole("alert").textContent(), WAIT).toMatch(/burst.*\(400 invalid_request\)$/);
    expect(await dialog.isVisible()).toBe(true); // to be put right, or cancelled
    expect(await shared.server.call("GET", `/v1/queues/${bulk}`)).toMatchObject({ ratePerSecond: 2.5, burst: 10 }); // unchanged
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached", ...WAIT });
    await leave(visited, shared.server.url);
  });

  test("a new queue's name the API refuses is shown with its message and code in the dialog, and changes nothing", async () => {
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, shared.server.url);
    const before = await shared.server.call("GET", "/v1/queues");
    await page.getByRole("button", { name: "New queue" }).click();
    const dialog = page.getByRole("dialog", { name: "Settings of a new queue" });
    await dialog.getByLabel("Queue name").fill("q".repeat(256));
    await dialog.getByLabel("Max leased").fill("4");
    await dialog.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => dialog.getByRole("alert").textContent(), WAIT).toMatch(/^queue .*255.* \(400 invalid_request\)$/);
    expect(await shared.server.call("GET", "/v1/queues")).toEqual(before);
    await leave(visited, shared.server.url);
  });
});
