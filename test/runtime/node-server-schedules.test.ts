import { describe, expect, test } from "vitest";
import { InvalidRequestError, LeaseClient, NotFoundError } from "../../src/client/index.ts";
import { startServer } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";

// Schedules on the real Node server: the client's calls, and the server's
// schedule timer, on a clock the test moves by hand.

const TOKEN = "schedules-test-token";
const T = Date.UTC(2026, 10, 30, 2, 59, 30);
const AT_3 = Date.UTC(2026, 10, 30, 3, 0, 0);

/** The Node server on a fresh database with the hand clock, and a client for it. */
async function serving(options: { scheduleRecheckMs?: number; recheckMs?: number } = {}) {
  const fresh = await freshStore();
  const clock = { now: T };
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: fresh.url, auth: { tokens: [TOKEN] }, clock: () => clock.now, ...options });
  const client = new LeaseClient({ baseUrl: server.url, token: TOKEN, retry: { retries: 0 } });
  return { ...fresh, clock, server, client, [Symbol.asyncDispose]: () => server.stop() };
}

describe("schedules on the Node server", () => {
  test("the client puts, gets, lists and deletes schedules, and a refusal is a typed error", async () => {
    await using s = await serving({ scheduleRecheckMs: 0 });
    const put = await s.client.schedules.put("nightly", { queue: "reports", cron: "0 3 * * *", payload: { n: 1 } });
    expect(put).toEqual({
      name: "nightly", queue: "reports", cron: "0 3 * * *", everyMs: null, timezone: "UTC", payload: { n: 1 },
      priority: 0, maxAttempts: 25, key: null, nextFireAt: AT_3, lastFireAt: null, lastFireTaken: false, createdAt: T, updatedAt: T,
    });
    expect(await s.client.schedules.put("a/b c", { queue: "q", everyMs: 60_000 })).toMatchObject({ name: "a/b c", everyMs: 60_000 });
    expect(await s.client.schedules.get("a/b c")).toMatchObject({ name: "a/b c", nextFireAt: T + 60_000 });
    expect((await s.client.schedules.list()).map((schedule) => schedule.name)).toEqual(["a/b c", "nightly"]);
    await expect(s.client.schedules.put("bad", { queue: "q", cron: "0 3 * * *", everyMs: 60_000 })).rejects.toBeInstanceOf(InvalidRequestError);
    expect(await s.client.schedules.delete("a/b c")).toBeUndefined();
    await expect(s.client.schedules.delete("a/b c")).rejects.toBeInstanceOf(NotFoundError);
    await expect(s.client.schedules.get("a/b c")).rejects.toBeInstanceOf(NotFoundError);
    expect(await s.client.schedules.list()).toEqual([put]);
  });

  test("the server's timer fires a schedule once its time comes, and a claim waiting on its queue takes the job", async () => {
    // The waiting claim looks again only when rung (its own re-check is a minute away): the fire must ring it.
    await using s = await serving({ scheduleRecheckMs: 5, recheckMs: 60_000 });
    await s.client.schedules.put("nightly", { queue: "reports", cron: "0 3 * * *" });
    const waiting = s.client.claimNextAnswer("reports", { owner: "A", ttlMs: 60_000, waitMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await s.snapshot()).toEqual({}); // not before its time
    s.clock.now = AT_3;
    const { leases: [lease], waitedMs } = await waiting;
    expect(waitedMs).toBeLessThan(5_000); // rung by the fire, not answered at its deadline's last look
    expect(lease).toMatchObject({ fence: 1, job: { id: "nightly@2026-11-30T03:00:00.000Z", queue: "reports", runAt: AT_3 } });
    expect(await s.client.schedules.get("nightly")).toMatchObject({ lastFireAt: AT_3, nextFireAt: AT_3 + 24 * 3_600_000 });
  });

  test("after the server's clock steps back an hour, its timer fires a per-minute schedule at the next minute by that clock", async () => {
    await using s = await serving({ scheduleRecheckMs: 5 });
    const HOUR = 3_600_000;
    const jobs = async () => Object.keys(await s.snapshot());
    const until = async (what: string, condition: () => Promise<boolean>) => {
      for (const started = Date.now(); !(await condition()); await new Promise((resolve) => setTimeout(resolve, 5))) {
        if (Date.now() - started > 5_000) throw new Error(`timed out waiting for ${what}`);
      }
    };
    await s.client.schedules.put("tick", { queue: "q", cron: "* * * * *" });
    s.clock.now = AT_3 + HOUR + 30_000; // an hour ahead: the timer fires 04:00
    await until("04:00", async () => (await jobs()).includes("tick@2026-11-30T04:00:00.000Z"));
    s.clock.now = AT_3 + 30_000; // the NTP correction
    await until("the next fire planned by the corrected clock", async () => (await s.client.schedules.get("tick")).nextFireAt === AT_3 + 60_000);
    expect(await jobs()).toEqual(["tick@2026-11-30T04:00:00.000Z"]);
    s.clock.now = AT_3 + 60_000;
    await until("03:01", async () => (await jobs()).includes("tick@2026-11-30T03:01:00.000Z"));
  });
});
