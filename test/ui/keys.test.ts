import { expect, onTestFinished, test } from "vitest";
import { openStore } from "../../src/node.ts";
import { browserAndServer, leave, signIn, T, visit, WAIT } from "./browser.ts";

// A queue's page in the dashboard, in Chromium against a real Node server: its
// settings, its keys' among them, and the table of its keys with open jobs.
// The keyed jobs and the per-key settings are written by a store of the test's
// own on the server's database.

const shared = browserAndServer();

test("a queue's page shows its per-key settings and each key with open jobs: waiting, leased, and why it holds jobs back", async () => {
  const store = await openStore({ url: shared.server.databaseUrl, migrations: false });
  onTestFinished(() => store.close());
  await store.queues.set("tenants", { maxLeasedPerKey: 1, keyRatePerSecond: 2, keyBurst: 4, fairByKey: true, now: T });
  const jobs = [["acme", 3], ["beta", 1]].flatMap(([key, count]) => Array.from({ length: count as number }, (_, i) => ({ id: `tenants-${key}-${i}`, key: key as string })));
  await store.enqueueMany("tenants", { jobs, now: T });
  await store.enqueueMany("bystander", { jobs: [{ id: "bystander-1", key: "zeta" }], now: T });
  const lease = await shared.server.call("POST", "/v1/jobs/tenants-acme-0/claim", { owner: "W", ttlMs: 60_000 });

  const visited = await visit(shared.browser);
  const { page } = visited;
  await signIn(page, shared.server.url);
  await page.getByRole("link", { name: "Settings and keys of queue tenants" }).click();
  await page.getByRole("heading", { name: "Queue tenants" }).waitFor(WAIT);

  const setting = (label: string) => page.locator(`#queue-settings dd[data-setting="${label}"]`).textContent();
  await expect.poll(() => setting("Leases a key"), WAIT).toBe("1");
  expect(await setting("Key rate")).toBe("2/s, burst 4");
  expect(await setting("Ordered by key")).toBe("no");
  expect(await setting("Fair between keys")).toBe("yes: keys take turns");

  const row = (key: string) => page.locator(`#queue-keys tr[data-key="${key}"]`);
  await expect.poll(() => row("acme").locator("td").allTextContents(), WAIT).toEqual(["2", "1", "full: its maxLeasedPerKey leases"]);
  expect(await row("acme").locator("[data-reason]").getAttribute("data-reason")).toBe("key_full");
  expect(await row("beta").locator("td").allTextContents()).toEqual(["1", "0", "–"]);
  expect(await page.locator("#queue-keys tbody tr").count()).toBe(2); // the bystander's key is not among them
  expect(await page.locator("#next-keys").count()).toBe(0);

  // A lease ends: the page reads the keys again by itself.
  expect((await shared.server.call("POST", "/v1/jobs/tenants-acme-0/complete", { owner: "W", fence: lease.fence, result: "ok" })).job.status).toBe("done");
  await expect.poll(() => row("acme").locator("td").allTextContents(), WAIT).toEqual(["2", "0", "–"]);
  await leave(visited, shared.server.url);
});

test("a queue with more keys than a page shows 100, and Next keys the rest", async () => {
  const store = await openStore({ url: shared.server.databaseUrl, migrations: false });
  onTestFinished(() => store.close());
  const jobs = Array.from({ length: 101 }, (_, i) => ({ id: `paged-${i}`, key: `k${String(i).padStart(3, "0")}` }));
  await store.enqueueMany("paged", { jobs, now: T });

  const visited = await visit(shared.browser);
  const { page } = visited;
  await signIn(page, shared.server.url);
  await page.goto(`${shared.server.url}/ui#/queue/paged`);
  await expect.poll(() => page.locator("#queue-keys tbody tr").count(), WAIT).toBe(100);
  expect(await page.locator("#queue-keys tbody tr").last().getAttribute("data-key")).toBe("k099");
  await page.getByRole("link", { name: "Next keys" }).click();
  await expect.poll(() => page.locator("#queue-keys tbody tr").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-key"))), WAIT).toEqual(["k100"]);
  expect(page.url()).toContain("#/queue/paged?cursor=k099");
  await leave(visited, shared.server.url);
});
