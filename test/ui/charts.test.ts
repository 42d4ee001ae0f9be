import type { Page } from "playwright-core";
import { expect, test } from "vitest";
import { browserAndServer, fitsWidth, leave, signIn, T, type UiServer, visit, WAIT } from "./browser.ts";

// A queue's charts in Chromium against a real Node server: what they draw is
// the numbers of GET /v1/queues/{queue}/series for the range the page asked,
// an hour, a day or a month, and they fit a phone. The page's clock is set to
// the server's, so that "the last hour" is the same hour for both.
// UI_SCREENSHOT_CHARTS=docs/charts.png runs the last test, which saves
// docs/dashboard.md's pictures of a busy hour (docs/charts.png at 1280 px,
// docs/charts-narrow.png at 390 px).

const shared = browserAndServer();
const QUEUE = "charted";

type Quantiles = { count: number; p50: number | null; p90: number | null; p99: number | null };
type Point = { at: number; wait: Quantiles; run: Quantiles } & Record<"enqueued" | "completed" | "failed" | "expired" | "dead" | "refused", number>;
type Series = { step: number; from: number; to: number; points: Point[] };

/** Claims `id` for `owner` at `at` (ms after T), and answers its fence. */
async function claim(server: UiServer, id: string, owner: string, at: number, ttlMs = 60_000): Promise<number> {
  server.clock.now = T + at;
  return (await server.call("POST", `/v1/jobs/${id}/claim`, { owner, ttlMs })).fence;
}

/** Sends a lease's write at `at` (ms after T): answers the job's status after it, or the code it was refused with. */
async function write(server: UiServer, id: string, verb: "complete" | "fail", at: number, body: Record<string, unknown>): Promise<string> {
  server.clock.now = T + at;
  const answer = await server.call("POST", `/v1/jobs/${id}/${verb}`, body);
  return answer.job?.status ?? answer.error?.code;
}

/**
 * The queue's two busy minutes, 09:00 and 09:02 (none in 09:01): five jobs
 * enqueued; at 09:00 one completed, one failed and retried, one dead; at 09:02
 * the retried one completed, a lease taken over after it expired, whose old
 * owner's complete was refused (and the expiry counted), completed by the new one, and one more completed.
 */
async function busyMinutes(server: UiServer): Promise<void> {
  server.clock.now = T + 5_000;
  await server.call("POST", `/v1/queues/${QUEUE}/jobs`, { jobs: [{ id: "c-1" }, { id: "c-2" }, { id: "retried", maxAttempts: 2 }, { id: "dead", maxAttempts: 1 }, { id: "stale" }] });
  expect(await write(server, "c-1", "complete", 12_000, { owner: "W", fence: await claim(server, "c-1", "W", 10_000), result: "ok" })).toBe("done");
  expect(await write(server, "retried", "fail", 13_000, { owner: "W", fence: await claim(server, "retried", "W", 10_000), error: "timeout", retryInMs: 30_000 })).toBe("scheduled");
  expect(await write(server, "dead", "fail", 13_000, { owner: "W", fence: await claim(server, "dead", "W", 10_000), error: "bad input" })).toBe("dead");
  const old = await claim(server, "stale", "A", 14_000, 20_000);
  expect(await write(server, "retried", "complete", 130_000, { owner: "W", fence: await claim(server, "retried", "W", 125_000), result: "ok" })).toBe("done");
  const taken = await claim(server, "stale", "B", 125_000);
  expect(await write(server, "stale", "complete", 126_000, { owner: "A", fence: old, result: "late" })).toBe("stale_lease");
  expect(await write(server, "stale", "complete", 135_000, { owner: "B", fence: taken, result: "ok" })).toBe("done");
  expect(await write(server, "c-2", "complete", 150_000, { owner: "W", fence: await claim(server, "c-2", "W", 140_000), result: "ok" })).toBe("done");
  server.clock.now = T + 170_000;
}

/** What each chart draws: its series' marks as [step, value], as the page carries them. */
function drawn(page: Page): Promise<Record<string, Record<string, number[][]>>> {
  return page.$$eval("#queue-charts figure", (figures) => Object.fromEntries(figures.map((figure) => [figure.id.replace("chart-", ""),
    Object.fromEntries([...figure.querySelectorAll("g[data-series]")].map((series) => [series.getAttribute("data-series"),
      [...series.querySelectorAll("[data-value]")].map((mark) => [Number(mark.getAttribute("data-at")), Number(mark.getAttribute("data-value"))])]))])));
}

/** What the charts should draw from `series`: every step's counts, and the quantiles of the steps that have them. */
function expected(series: Series): Record<string, Record<string, number[][]>> {
  const counts = (name: "enqueued" | "completed" | "failed" | "expired" | "dead" | "refused") => series.points.map((point) => [point.at, point[name]]);
  const times = (which: "wait" | "run", quantile: "p50" | "p99") =>
    series.points.flatMap((point) => (point[which][quantile] === null ? [] : [[point.at, point[which][quantile]]]));
  return {
    throughput: { enqueued: counts("enqueued"), completed: counts("completed") },
    failures: { failed: counts("failed"), expired: counts("expired"), dead: counts("dead"), refused: counts("refused") },
    times: { "wait-p50": times("wait", "p50"), "wait-p99": times("wait", "p99"), "run-p50": times("run", "p50"), "run-p99": times("run", "p99") },
  };
}

/**
 * Does `go` (a link, a click, a reload), then waits for the page to ask for a series of `step` and to draw
 * the server's answer to that very query; answers the query and the answer.
 */
async function openCharts(page: Page, step: number, go: () => Promise<unknown>): Promise<{ query: URLSearchParams; series: Series }> {
  const request = page.waitForRequest((r) => r.url().includes("/series?") && new URL(r.url()).searchParams.get("step") === String(step), WAIT);
  await go();
  const query = new URL((await request).url()).searchParams;
  const series: Series = await shared.server.call("GET", `/v1/queues/${QUEUE}/series?${query}`);
  await expect.poll(() => drawn(page), WAIT).toEqual(expected(series));
  return { query, series };
}

test("a queue's charts draw the numbers of its series for the hour, the day and the month the page asks for, and read them again by themselves", async () => {
  const { server } = shared;
  await busyMinutes(server);
  const now = server.clock.now;
  const visited = await visit(shared.browser);
  const { page } = visited;
  await page.clock.setFixedTime(now);
  await signIn(page, server.url);

  const hour = await openCharts(page, 60_000, () => page.goto(`${server.url}/ui#/queue/${QUEUE}`));
  expect(Object.fromEntries(hour.query)).toEqual({ from: String(now - 59 * 60_000), to: String(now), step: "60000" });
  expect(hour.series.points).toHaveLength(60);
  const [nine, quiet, two] = hour.series.points.slice(-3);
  expect(nine).toMatchObject({ at: T, enqueued: 5, completed: 1, failed: 1, dead: 1, refused: 0, wait: { count: 1 }, run: { count: 1 } });
  expect(quiet).toMatchObject({ at: T + 60_000, enqueued: 0, completed: 0, wait: { count: 0, p50: null, p99: null } });
  expect(two).toMatchObject({ at: T + 120_000, enqueued: 0, completed: 3, failed: 0, expired: 1, dead: 0, refused: 1, wait: { count: 3 }, run: { count: 3 } });
  const label = (chart: string) => page.locator(`#chart-${chart} svg`).getAttribute("aria-label");
  expect(await label("throughput")).toBe("Jobs in and out, a point a minute over the last hour: 5 enqueued and 4 completed in all.");
  expect(await label("failures")).toBe("Failures, a point a minute over the last hour: 1 failed, 1 expired, 1 dead and 1 refused in all.");
  expect(await page.locator("#chart-times .axis.values text").allTextContents()).toEqual(["100 ms", "1 s", "10 s", "1 min", "10 min"]);
  // The quiet minute between the two busy ones breaks each time line in two.
  expect(await page.locator("#chart-times g[data-series=wait-p50] path").getAttribute("d")).toMatch(/^M[^M]*M[^M]*$/);
  expect(await page.getByRole("button", { name: "Hour" }).getAttribute("aria-pressed")).toBe("true");

  // A job enqueued now: the charts read the series again by themselves.
  await server.call("POST", "/v1/jobs", { id: "late", queue: QUEUE });
  const enqueuedNow = () => drawn(page).then((charts) => charts.throughput?.enqueued?.at(-1));
  await expect.poll(enqueuedNow, WAIT).toEqual([T + 120_000, 1]);

  const day = await openCharts(page, 900_000, () => page.getByRole("button", { name: "Day" }).click());
  expect(Object.fromEntries(day.query)).toEqual({ from: String(now - 95 * 900_000), to: String(now), step: "900000" });
  expect(await page.locator("#chart-throughput g[data-series=enqueued] rect").count()).toBe(96);
  expect(page.url()).toContain(`#/queue/${QUEUE}?range=day`);
  expect(await page.getByRole("button", { name: "Day" }).getAttribute("aria-pressed")).toBe("true");

  const month = await openCharts(page, 86_400_000, () => page.getByRole("button", { name: "Month" }).click());
  expect(Object.fromEntries(month.query)).toEqual({ from: String(now - 29 * 86_400_000), to: String(now), step: "86400000" });
  expect(await page.locator("#chart-failures g[data-series=dead] rect").count()).toBe(30);
  await openCharts(page, 86_400_000, () => page.reload()); // the range is the URL's
  await leave(visited, server.url);
});

test("at 390 px the charts, their legends and range buttons fit the page: nothing scrolls sideways", async () => {
  const { server } = shared;
  const visited = await visit(shared.browser, 390);
  const { page } = visited;
  await page.clock.setFixedTime(server.clock.now);
  await signIn(page, server.url);
  await openCharts(page, 60_000, () => page.goto(`${server.url}/ui#/queue/${QUEUE}`));
  expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
  expect(await fitsWidth(page)).toBe(true);
  const widths = await page.locator("#queue-charts svg").evaluateAll((svgs) => svgs.map((svg) => svg.getBoundingClientRect().right));
  expect(widths.every((right) => right <= 390)).toBe(true);
  await leave(visited, server.url);
});

test("a series the server refuses says so in the charts' place, and the queue's settings and keys still show", async () => {
  const { server } = shared;
  const visited = await visit(shared.browser);
  const { page } = visited;
  await page.route("**/series?**", (route) => route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ error: { code: "unavailable", message: "the database is busy" } }) }));
  await signIn(page, server.url);
  await page.goto(`${server.url}/ui#/queue/${QUEUE}`);
  await expect.poll(() => page.locator("#charts-problem").textContent(), WAIT).toContain("The charts could not be read: the database is busy");
  expect(await page.locator("#queue-settings dd[data-setting=State]").textContent()).toBe("running");
  expect(await page.locator("#queue-charts figure").count()).toBe(0);
  await leave(visited, server.url);
});

/**
 * An hour of a busy queue, a minute at a time up to the server's clock: jobs
 * enqueued in waves, claimed after a wait that grows and shrinks, completed
 * in two groups that ran for different times; now and then a failure, a job
 * that dies, and a refused stale write.
 */
async function busyHour(server: UiServer, queue: string): Promise<void> {
  const start = server.clock.now - 59 * 60_000;
  for (let minute = 0; minute < 60; minute++) {
    const at = start + minute * 60_000;
    const n = 20 + Math.round(15 * Math.sin(minute / 8));
    server.clock.now = at;
    const jobs = Array.from({ length: n }, (_, i) => ({ id: `${queue}-${minute}-${i}`, maxAttempts: i === 0 && minute % 13 === 0 ? 1 : 3 }));
    await server.call("POST", `/v1/queues/${queue}/jobs`, { jobs });
    server.clock.now = at + 200 + 100 * (minute % 20);
    const { leases } = await server.call("POST", `/v1/queues/${queue}/claim`, { owner: "W", ttlMs: 60_000, limit: 100 });
    const [first, ...rest] = leases as { fence: number; job: { id: string } }[];
    if (minute % 7 === 0) await server.call("POST", `/v1/jobs/${first!.job.id}/fail`, { owner: "W", fence: first!.fence, error: "timeout", retryInMs: 3_600_000 });
    else if (minute % 13 === 0) await server.call("POST", `/v1/jobs/${first!.job.id}/fail`, { owner: "W", fence: first!.fence, error: "bad input" });
    else rest.unshift(first!);
    if (minute % 17 === 0) await server.call("POST", `/v1/jobs/${rest[0]!.job.id}/complete`, { owner: "stale", fence: rest[0]!.fence, result: "late" });
    const half = Math.ceil(rest.length / 2);
    for (const [group, ranFor] of [[rest.slice(0, half), 800], [rest.slice(half), 4_000 + 200 * (minute % 10)]] as const) {
      server.clock.now += ranFor;
      await server.call("POST", "/v1/leases/complete", { owner: "W", leases: group.map((lease) => ({ id: lease.job.id, fence: lease.fence, result: "ok" })) });
    }
  }
  server.clock.now = start + 59 * 60_000 + 30_000;
}

test.runIf(process.env.UI_SCREENSHOT_CHARTS)("docs' pictures: a busy hour's charts, at 1280 and 390 px, draw its series", async () => {
  const { server } = shared;
  server.clock.now += 2 * 60 * 60_000;
  await busyHour(server, "orders");
  for (const [width, path] of [[1280, process.env.UI_SCREENSHOT_CHARTS!], [390, process.env.UI_SCREENSHOT_CHARTS!.replace(/\.png$/, "-narrow.png")]] as const) {
    const visited = await visit(shared.browser, width);
    const { page } = visited;
    await page.clock.setFixedTime(server.clock.now);
    await signIn(page, server.url);
    const request = page.waitForRequest((r) => r.url().includes("/orders/series?"), WAIT);
    await page.goto(`${server.url}/ui#/queue/orders`);
    const series: Series = await server.call("GET", `/v1/queues/orders/series?${new URL((await request).url()).searchParams}`);
    await expect.poll(() => drawn(page), WAIT).toEqual(expected(series));
    await page.screenshot({ path, fullPage: true });
    await leave(visited, server.url);
  }
}, 120_000);
