import { expect, test } from "vitest";
import { browserAndServer, leave, signIn, visit, WAIT } from "./browser.ts";

// Once per key and steps on a job's page, in Chromium against a real Node
// server: the job's dedup key with the end of its window; on a job a
// supersede cancelled, the job that superseded it, a link to that job's page;
// and each step recorded, in the lease that recorded it on the timeline.

const shared = browserAndServer();

test("a job's page shows its dedup key and window, and a superseded job links to the job that replaced it", async () => {
  const { server } = shared;
  const window = await server.call("POST", "/v1/jobs", { id: "pay-once", queue: "pay", dedupKey: "order-7", dedupTtlMs: 600_000 });
  await server.call("POST", "/v1/jobs", { id: "sync-v1", queue: "sync", dedupKey: "doc-9", supersede: true });
  await server.call("POST", "/v1/jobs/sync-v1/claim", { owner: "A", ttlMs: 60_000 });
  expect(await server.call("POST", "/v1/jobs", { id: "sync-v2", queue: "sync", dedupKey: "doc-9", supersede: true })).toMatchObject({ superseded: "sync-v1" });

  const visited = await visit(shared.browser);
  const { page } = visited;
  await signIn(page, server.url);
  await page.goto(`${server.url}/ui#/job/pay-once`);
  await page.locator("h1 .status-queued").waitFor(WAIT);
  const field = (name: string) => page.locator(`dd[data-field="${name}"]`);
  expect(await field("dedup key").textContent()).toMatch(/^order-7, its window until /);
  expect(await field("dedup key").locator("time").getAttribute("datetime")).toBe(new Date(window.job.dedupUntil).toISOString());
  expect(await field("superseded by").count()).toBe(0);

  await page.goto(`${server.url}/ui#/job/sync-v1`);
  await page.locator("h1 .status-cancelled").waitFor(WAIT);
  expect(await field("dedup key").textContent()).toBe("doc-9");
  expect(await field("cancelled by").textContent()).toBe("enqueue");
  expect(await field("reason").textContent()).toBe('superseded by job "sync-v2"');
  expect(await field("lease then").textContent()).toBe("A, fence 1: its writes are refused");
  await field("superseded by").getByRole("link", { name: "sync-v2" }).click();
  await page.locator("h1 .status-queued").waitFor(WAIT);
  expect(await page.locator("h1").textContent()).toContain("sync-v2");
  await leave(visited, server.url);
});

test("the timeline shows each step in the lease that recorded it, and a stale lease's step refused beside the lease it lost to", async () => {
  const { server } = shared;
  await server.call("POST", "/v1/jobs", { id: "order-steps", queue: "orders" });
  const first = await server.call("POST", "/v1/jobs/order-steps/claim", { owner: "A", ttlMs: 1_000 });
  expect(await server.call("POST", "/v1/jobs/order-steps/steps/charge", { owner: "A", fence: first.fence, result: { charge: "ch_1" } })).toMatchObject({ recorded: true });
  server.clock.now += 1_001; // A stalls past its lease
  const second = await server.call("POST", "/v1/queues/orders/claim", { owner: "B", ttlMs: 60_000 });
  expect(second.leases[0].job.steps).toMatchObject({ charge: { result: { charge: "ch_1" }, fence: first.fence } });
  expect(await server.call("POST", "/v1/jobs/order-steps/steps/email", { owner: "B", fence: second.leases[0].fence, result: "sent" })).toMatchObject({ recorded: true });
  const late = await server.call("POST", "/v1/jobs/order-steps/steps/email", { owner: "A", fence: first.fence, result: "sent twice" });
  expect(late.error).toMatchObject({ code: "stale_lease" });

  const visited = await visit(shared.browser, 390);
  const { page } = visited;
  await signIn(page, server.url);
  await page.goto(`${server.url}/ui#/job/order-steps`);
  await page.locator(".timeline").waitFor(WAIT);
  const lease = (fence: number) => page.locator(`li.generation[data-fence='${fence}']`);
  expect(await lease(first.fence).locator("li.step.recorded").allTextContents()).toEqual([expect.stringMatching(/ step charge recorded: \{"charge":"ch_1"\}$/)]);
  expect(await lease(second.leases[0].fence).locator("li.step.recorded").allTextContents()).toEqual([expect.stringMatching(/ step email recorded: "sent"$/)]);
  expect(await lease(second.leases[0].fence).locator(".refusal .what").textContent()).toMatch(/^✕ step by A /);
  await leave(visited, server.url);
});
