import { describe, expect, test } from "vitest";
import { browserAndServer, fitsWidth, leave, signIn, visit, WAIT } from "./browser.ts";

// The queue controls of the dashboard in Chromium against a real Node server:
// each click is checked on the page and in the server's state.

const shared = browserAndServer();

/** A fresh queue name per test, with `count` jobs due now, so the tests share a server and not their queues. */
async function queueWithJobs(queue: string, count: number): Promise<string> {
  await shared.server.call("POST", `/v1/queues/${queue}/jobs`, { jobs: Array.from({ length: count }, (_, i) => ({ id: `${queue}-${i}` })) });
  return queue;
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
    expect(await shared.server.call("GET", `/v1/queues/${mail}`)).toEqual({ queue: mail, paused: true, maxLeased: null, ratePerSecond: null, burst: null });
    expect(await shared.server.call("GET", `/v1/queues/${zip}`)).toEqual({ queue: zip, paused: false, maxLeased: null, ratePerSecond: null, burst: null }); // the bystander
    expect(await shared.server.call("POST", `/v1/queues/${mail}/claim`, { owner: "A", ttlMs: 10_000 })).toEqual({ leases: [] });
    expect(await page.getByRole("button", { name: "Pause queue mail" }).count()).toBe(0);

    await page.getByRole("button", { name: "Resume queue mail" }).click();
    await expect.poll(() => state.textContent(), WAIT).toBe("running");
    expect(await shared.server.call("GET", `/v1/queues/${mail}`)).toEqual({ queue: mail, paused: false, maxLeased: null, ratePerSecond: null, burst: null });
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

  test("at 390 px the settings form sets a queue's maxLeased, sets a queue with no jobs yet, and an empty field takes the limit away", async () => {
    const reports = await queueWithJobs("reports", 1);
    const visited = await visit(shared.browser, 390);
    const { page } = visited;
    await signIn(page, shared.server.url);
    const limits = (queue: string) => page.locator(`tr[data-queue=${queue}] td[data-setting=limits]`);
    await expect.poll(() => limits(reports).textContent(), WAIT).toBe("no limit");

    await page.getByRole("button", { name: "Settings of queue reports" }).click();
    expect(await page.getByLabel("Queue", { exact: true }).inputValue()).toBe(reports);
    await page.getByLabel("Max leased").fill("2");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => limits(reports).textContent(), WAIT).toBe("max leased 2");
    expect(await page.locator("#queue-note").textContent()).toBe("Saved reports: max leased 2.");
    expect(await shared.server.call("GET", `/v1/queues/${reports}`)).toEqual({ queue: reports, paused: false, maxLeased: 2, ratePerSecond: null, burst: null });

    await page.getByLabel("Queue", { exact: true }).fill("exports");
    await page.getByLabel("Max leased").fill("3");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => limits("exports").textContent(), WAIT).toBe("max leased 3"); // listed with zero counts
    expect(await page.locator("tr[data-queue=exports] td[data-stat=queued]").textContent()).toBe("0");
    expect(await shared.server.call("GET", "/v1/queues/exports")).toEqual({ queue: "exports", paused: false, maxLeased: 3, ratePerSecond: null, burst: null });

    await page.getByRole("button", { name: "Settings of queue reports" }).click();
    expect(await page.getByLabel("Max leased").inputValue()).toBe("2");
    await page.getByLabel("Max leased").fill("");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => limits(reports).textContent(), WAIT).toBe("no limit");
    expect(await shared.server.call("GET", `/v1/queues/${reports}`)).toEqual({ queue: reports, paused: false, maxLeased: null, ratePerSecond: null, burst: null });
    expect(await fitsWidth(page)).toBe(true);
    await leave(visited, shared.server.url);
  });

  test("the form sets a rate limit with its burst beside maxLeased, and a burst without a rate is refused by the API", async () => {
    const bulk = await queueWithJobs("bulk", 1);
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, shared.server.url);
    await page.getByRole("button", { name: `Settings of queue ${bulk}` }).click();
    await page.getByLabel("Max leased").fill("4");
    await page.getByLabel("Claims per second").fill("2.5");
    await page.getByLabel("Burst").fill("10");
    await page.getByRole("button", { name: "Save settings" }).click();
    const limits = page.locator(`tr[data-queue=${bulk}] td[data-setting=limits]`);
    await expect.poll(() => limits.textContent(), WAIT).toBe("max leased 4, 2.5/s burst 10");
    expect(await shared.server.call("GET", `/v1/queues/${bulk}`)).toEqual({ queue: bulk, paused: false, maxLeased: 4, ratePerSecond: 2.5, burst: 10 });

    await page.getByLabel("Claims per second").fill("");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), WAIT).toMatch(/burst.*\(400 invalid_request\)$/);
    expect(await shared.server.call("GET", `/v1/queues/${bulk}`)).toMatchObject({ ratePerSecond: 2.5, burst: 10 }); // unchanged
    await leave(visited, shared.server.url);
  });

  test("a refusal of the API is shown with its message and code, and changes nothing", async () => {
    const visited = await visit(shared.browser);
    const { page } = visited;
    await signIn(page, shared.server.url);
    const before = await shared.server.call("GET", "/v1/queues");
    await page.getByLabel("Queue", { exact: true }).fill("q".repeat(256));
    await page.getByLabel("Max leased").fill("4");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), WAIT).toMatch(/^queue .*255.* \(400 invalid_request\)$/);
    expect(await shared.server.call("GET", "/v1/queues")).toEqual(before);
    await leave(visited, shared.server.url);
  });
});
