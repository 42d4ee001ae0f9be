import { createExecutionContext, createScheduledController, env, SELF } from "cloudflare:test";
import { beforeEach, expect, test } from "vitest";
import cronWorker, { type Env, storeTotal } from "../../examples/cron-worker/src/index.ts";

const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts

function fencelease(method: string, path: string, body?: unknown): Promise<Response> {
  return SELF.fetch(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

// The example's own table lives beside fencelease's in the test's D1.
beforeEach(async () => {
  await env.DB.exec("DROP TABLE IF EXISTS invoice_totals");
  await env.DB.exec("CREATE TABLE invoice_totals (job_id TEXT PRIMARY KEY, fence INTEGER NOT NULL, total INTEGER NOT NULL)");
});

test("the cron Worker drains the due jobs, writing each total downstream with its fence", async () => {
  await fencelease("POST", "/v1/jobs", { id: "inv-1", queue: "invoices", payload: { lines: [{ amount: 100 }, { amount: 20 }] } });
  await fencelease("POST", "/v1/jobs", { id: "inv-2", queue: "invoices", payload: { lines: [{ amount: 7 }] } });
  await fencelease("POST", "/v1/jobs", { id: "not-mine", queue: "other" });
  const exampleEnv: Env = { FENCELEASE_URL: "https://fencelease.test", FENCELEASE_TOKEN: TOKEN, FENCELEASE: SELF as never, DB: env.DB, QUEUE: "invoices" };

  await cronWorker.scheduled(createScheduledController() as never, exampleEnv, createExecutionContext() as never);

  const totals = await env.DB.prepare("SELECT job_id, fence, total FROM invoice_totals ORDER BY job_id").all();
  expect(totals.results).toEqual([
    { job_id: "inv-1", fence: 1, total: 120 },
    { job_id: "inv-2", fence: 1, total: 7 },
  ]);
  for (const id of ["inv-1", "inv-2"]) {
    expect(await (await fencelease("GET", `/v1/jobs/${id}`)).json()).toMatchObject({ done: true, fence: 1 });
  }
  expect(await (await fencelease("GET", "/v1/jobs/not-mine")).json()).toMatchObject({ done: false, fence: 0 });
});

test("a downstream write from an older lease is refused by the fenced statement", async () => {
  expect(await storeTotal(env.DB, "inv-1", 2, 500)).toBe(true);
  expect(await storeTotal(env.DB, "inv-1", 1, 999)).toBe(false); // the stale worker comes back
  expect(await storeTotal(env.DB, "inv-1", 2, 999)).toBe(false); // the same fence twice is not newer either
  expect(await storeTotal(env.DB, "inv-1", 3, 42)).toBe(true);
  expect(await env.DB.prepare("SELECT fence, total FROM invoice_totals").all()).toMatchObject({ results: [{ fence: 3, total: 42 }] });
});
