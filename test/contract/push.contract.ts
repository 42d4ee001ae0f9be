import { describe, expect, test } from "vitest";
import { InvalidArgument, NotFound } from "../../src/store/errors.ts";
import { claimToPush, PUSH_OWNER, PUSH_SETTLE_MS } from "../../src/store/sql/claim-next.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import type { FreshStorage } from "./storage.contract.ts";

// The push settings of a queue (store.push, migrations/0031), and the push
// claim, the claim-next statement with the queue's maxInFlight on top, run
// against every driver as the store contract is. Each test starts on a
// fresh, empty database; a bystander queue without push goes on as before.

const T = 1_000_000; // the test clock
const URL_A = "https://push.example/a";

/** Enqueues `count` jobs `<queue>-1`… in `queue`, due at T. */
async function enqueueJobs(store: LeaseStore, queue: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${queue}-${i + 1}`);
  for (const id of ids) await store.enqueue(id, { queue, now: T });
  return ids;
}

/** The ids a push claim took, in claim order. */
async function pushed(store: LeaseStore, queue: string, limit: number, now = T): Promise<string[]> {
  return (await store.push.claim(queue, { limit, now })).leases.map((lease) => lease.job.id);
}

/** Registers the push contract for one driver. */
export function pushContract(freshStore: () => Promise<FreshStorage>): void {
  describe("push settings", () => {
    test("the first put answers a new whsec_ secret with the defaults; a later one changes the endpoint, keeps the secret and shows it no more", async () => {
      const { store } = await freshStore();
      const first = await store.push.put("mail", { url: URL_A, now: T });
      expect(first).toEqual({
        created: true,
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
        settings: { queue: "mail", url: URL_A, timeoutMs: 10_000, maxInFlight: 10, rotating: false, rotatedAt: null, createdAt: T, updatedAt: T },
      });
      const second = await store.push.put("mail", { url: "http://127.0.0.1:9/b", timeoutMs: 2_000, maxInFlight: 3, now: T + 5 });
      expect(second).toEqual({
        created: false,
        settings: { queue: "mail", url: "http://127.0.0.1:9/b", timeoutMs: 2_000, maxInFlight: 3, rotating: false, rotatedAt: null, createdAt: T, updatedAt: T + 5 },
      });
      expect(await store.push.get("mail")).toEqual(second.settings);
      expect(await store.push.list()).toEqual([second.settings]);
      await enqueueJobs(store, "mail", 1);
      expect((await store.push.claim("mail", { limit: 1, now: T + 6 })).target?.secrets).toEqual([first.secret]);
    });

    test("a put with a bad field is refused, naming it, and changes nothing", async () => {
      const { store } = await freshStore();
      const { settings } = await store.push.put("mail", { url: URL_A, now: T });
      const bad: [Parameters<LeaseStore["push"]["put"]>[1], RegExp][] = [
        [{ url: "ftp://push.example/a" }, /url must be an http: or https: URL/],
        [{ url: "/relative" }, /url must be an absolute http: or https: URL/],
        [{ url: "https://user:pw@push.example/" }, /url must not hold a user name or password/],
        [{ url: "https://user@push.example/" }, /url must not hold a user name or password/],
        [{ url: "https://:pw@push.example/" }, /url must not hold a user name or password/],
        [{ url: `https://push.example/${"a".repeat(2_048)}` }, /url must be at most 2048 characters/],
        [{ url: "" }, /url must be a non-empty string/],
        [{ url: URL_A, timeoutMs: 0 }, /timeoutMs must be a positive safe integer/],
        [{ url: URL_A, timeoutMs: 300_001 }, /timeoutMs must be at most 300000/],
        [{ url: URL_A, maxInFlight: 1.5 }, /maxInFlight must be a positive safe integer/],
        [{ url: URL_A, maxInFlight: 1_001 }, /maxInFlight must be at most 1000/],
      ];
      for (const [request, message] of bad) {
        const refused = store.push.put("mail", { ...request, now: T + 1 });
        await expect(refused).rejects.toBeInstanceOf(InvalidArgument);
        await expect(refused).rejects.toThrow(message);
      }
      expect(await store.push.list()).toEqual([settings]);
    });

    test("a put takes each bound exactly: a URL of 2048 characters, timeoutMs 300000, maxInFlight 1000", async () => {
      const { store } = await freshStore();
      const url = `https://push.example/${"a".repeat(2_048 - "https://push.example/".length)}`;
      expect(url).toHaveLength(2_048);
      const { settings } = await store.push.put("mail", { url, timeoutMs: 300_000, maxInFlight: 1_000, now: T });
      expect(settings).toMatchObject({ url, timeoutMs: 300_000, maxInFlight: 1_000 });
      expect(await store.push.get("mail")).toEqual(settings);
    });

    test("a bad queue name, now or limit is refused by its name, and changes nothing", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "mail", 1);
      const { settings } = await store.push.put("mail", { url: URL_A, now: T });
      const bad: [() => Promise<unknown>, RegExp][] = [
        [() => store.push.put("", { url: URL_A, now: T + 1 }), /^queue must be a non-empty string/],
        [() => store.push.put("mail", { url: URL_A, now: -1 }), /^now must be integer milliseconds since the epoch, got -1$/],
        [() => store.push.rotate("", { now: T + 1 }), /^queue must be a non-empty string/],
        [() => store.push.rotate("mail", { now: -1 }), /^now must be integer milliseconds/],
        [() => store.push.get(""), /^queue must be a non-empty string/],
        [() => store.push.delete(""), /^queue must be a non-empty string/],
        [() => store.push.claim("", { limit: 1, now: T + 1 }), /^queue must be a non-empty string/],
        [() => store.push.claim("mail", { limit: 1, now: -1 }), /^now must be integer milliseconds/],
        [() => store.push.claim("mail", { limit: 0, now: T + 1 }), /^limit must be a positive safe integer, got 0$/],
        [() => store.push.nextDueAt("", { now: T + 1 }), /^queue must be a non-empty string/],
        [() => store.push.nextDueAt("mail", { now: -1 }), /^now must be integer milliseconds/],
        [() => store.push.stats({ now: -1 }), /^now must be integer milliseconds/],
      ];
      for (const [call, message] of bad) {
        const refused = call();
        await expect(refused).rejects.toBeInstanceOf(InvalidArgument);
        await expect(refused).rejects.toThrow(message);
      }
      expect(await store.push.list()).toEqual([settings]);
      expect(await store.get("mail-1", { now: T + 1 })).toMatchObject({ status: "queued", fence: 0 });
    });

    test("a rotation answers a new secret and signs with it and the one before until the next, which drops the older", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "mail", 3);
      const { secret: first } = await store.push.put("mail", { url: URL_A, now: T });
      const second = await store.push.rotate("mail", { now: T + 1 });
      expect(second.secret).toMatch(/^whsec_/);
      expect(second.secret).not.toBe(first);
      expect(second.settings).toMatchObject({ rotating: true, rotatedAt: T + 1, updatedAt: T + 1, createdAt: T });
      expect((await store.push.claim("mail", { limit: 1, now: T + 2 })).target?.secrets).toEqual([second.secret, first]);
      const third = await store.push.rotate("mail", { now: T + 3 });
      expect((await store.push.claim("mail", { limit: 1, now: T + 4 })).target?.secrets).toEqual([third.secret, second.secret]);
    });

    test("a queue without push: get, rotate and delete are NotFound; delete stops the claims", async () => {
      const { store } = await freshStore();
      for (const call of [() => store.push.get("mail"), () => store.push.rotate("mail"), () => store.push.delete("mail")]) {
        const refused = call();
        await expect(refused).rejects.toBeInstanceOf(NotFound);
        await expect(refused).rejects.toThrow(/^queue "mail" has no push endpoint$/);
      }
      await enqueueJobs(store, "mail", 2);
      expect(await store.push.claim("mail", { limit: 5, now: T })).toEqual({ leases: [], target: null });
      await store.push.put("mail", { url: URL_A, now: T });
      expect(await pushed(store, "mail", 1)).toEqual(["mail-1"]);
      await store.push.delete("mail");
      expect(await store.push.list()).toEqual([]);
      expect(await store.push.claim("mail", { limit: 5, now: T })).toEqual({ leases: [], target: null });
      expect((await store.get("mail-2", { now: T }))?.status).toBe("queued");
    });
  });

  describe("the push claim", () => {
    test("takes due jobs in claim order as the push owner, each for the timeout plus the settle time, with the settings to deliver them", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "mail", 3);
      await enqueueJobs(store, "other", 2);
      await store.push.put("mail", { url: URL_A, timeoutMs: 4_000, now: T });
      const { leases, target } = await store.push.claim("mail", { limit: 2, now: T + 10 });
      expect(leases.map(({ job, fence, until }) => ({ id: job.id, owner: job.owner, fence, until, attempts: job.attempts }))).toEqual([
        { id: "mail-1", owner: PUSH_OWNER, fence: 1, until: T + 10 + 4_000 + PUSH_SETTLE_MS, attempts: 1 },
        { id: "mail-2", owner: PUSH_OWNER, fence: 1, until: T + 10 + 4_000 + PUSH_SETTLE_MS, attempts: 1 },
      ]);
      expect(target).toMatchObject({ queue: "mail", url: URL_A, timeoutMs: 4_000, maxInFlight: 10 });
      expect(await pushed(store, "other", 5)).toEqual([]); // a queue without push: nothing
      expect((await store.get("other-1", { now: T + 10 }))?.status).toBe("queued");
    });

    test("takes at most maxInFlight pushed leases at once; one that ends frees its slot, and leases of other owners do not count", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "mail", 6);
      await store.push.put("mail", { url: URL_A, timeoutMs: 1_000, maxInFlight: 2, now: T });
      expect((await store.claim("mail-6", { owner: "worker", ttlMs: 60_000, now: T })).fence).toBe(1); // not pushed: not counted
      expect(await pushed(store, "mail", 5)).toEqual(["mail-1", "mail-2"]);
      expect(await pushed(store, "mail", 5)).toEqual([]);
      expect((await store.complete("mail-1", { owner: PUSH_OWNER, fence: 1, result: "1", now: T + 1 })).changed).toBe(true);
      expect(await pushed(store, "mail", 5, T + 2)).toEqual(["mail-3"]);
      // mail-2's lease runs out at T + 1000 + PUSH_SETTLE_MS: its slot is free, and it is claimed again (mail-3 holds the other).
      const later = T + 1_000 + PUSH_SETTLE_MS;
      expect(await pushed(store, "mail", 5, later)).toEqual(["mail-2"]);
      expect((await store.get("mail-2", { now: later }))?.fence).toBe(2);
      // A lower maxInFlight holds back new claims; the leases held go on.
      await store.push.put("mail", { url: URL_A, timeoutMs: 1_000, maxInFlight: 1, now: later });
      expect(await pushed(store, "mail", 5, later)).toEqual([]);
      expect((await store.get("mail-3", { now: later }))?.status).toBe("leased");
    });

    test("decides by the queue's pause, maxLeased and rate limit as any claim does, and says when the next token is due", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "mail", 6);
      await store.push.put("mail", { url: URL_A, now: T });
      await store.queues.pause("mail", { now: T });
      expect(await pushed(store, "mail", 5)).toEqual([]);
      await store.queues.resume("mail", { now: T });
      await store.queues.set("mail", { maxLeased: 1, now: T });
      expect(await pushed(store, "mail", 5)).toEqual(["mail-1"]);
      expect(await pushed(store, "mail", 5)).toEqual([]);
      await store.queues.set("mail", { ratePerSecond: 2, burst: 1, now: T });
      expect(await pushed(store, "mail", 5)).toEqual(["mail-2"]);
      const held = await store.push.claim("mail", { limit: 5, now: T });
      expect(held).toEqual({ leases: [], target: expect.objectContaining({ queue: "mail" }), retryAfterMs: 500 });
      expect(await pushed(store, "mail", 5, T + 500)).toEqual(["mail-3"]);
    });

    test("stopped short by a bucket whose clock stepped back, it follows the clock: the next token comes a refill after the corrected time", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await enqueueJobs(store, "mail", 5);
      await store.push.put("mail", { url: URL_A, now: T });
      await store.queues.set("mail", { ratePerSecond: 10, burst: 1, now: T });
      expect(await pushed(store, "mail", 5, T + 1_000)).toEqual(["mail-1"]);
      const stepped = await store.push.claim("mail", { limit: 5, now: T + 500 }); // the same store's clock, 500 ms back
      expect(stepped).toMatchObject({ leases: [], retryAfterMs: 100 });
      expect((await fresh.rows("SELECT micro_tokens, tokens_at FROM queues WHERE queue = ?", ["mail"]))[0]).toEqual({ micro_tokens: 0, tokens_at: T + 500 });
      expect(await pushed(store, "mail", 5, T + 600)).toEqual(["mail-2"]);
      expect(await pushed(store, "mail", 5, T + 650)).toEqual([]);
    });
  });

  test("nextDueAt: when a job is next due; while the maxInFlight pushed leases are all held, not before the first of them ends", async () => {
    const { store } = await freshStore();
    expect(await store.push.nextDueAt("mail", { now: T })).toBeNull(); // no endpoint
    await store.push.put("mail", { url: URL_A, timeoutMs: 1_000, maxInFlight: 2, now: T });
    expect(await store.push.nextDueAt("mail", { now: T })).toBeNull(); // no job
    await store.enqueue("later", { queue: "mail", runAt: T + 60_000, now: T });
    expect(await store.push.nextDueAt("mail", { now: T })).toBe(T + 60_000);
    await enqueueJobs(store, "mail", 3);
    expect(await store.push.nextDueAt("mail", { now: T })).toBe(T);
    expect(await pushed(store, "mail", 1)).toEqual(["mail-1"]);
    expect(await store.push.nextDueAt("mail", { now: T + 10 })).toBe(T); // a slot is free
    expect(await pushed(store, "mail", 1, T + 10)).toEqual(["mail-2"]);
    // Both slots held (say by 202s): mail-3 is due, but no push claim takes it before mail-1's lease ends.
    const firstEnd = T + 1_000 + PUSH_SETTLE_MS;
    expect(await store.push.nextDueAt("mail", { now: T + 20 })).toBe(firstEnd);
    expect(await pushed(store, "mail", 1, firstEnd - 1)).toEqual([]);
    expect(await pushed(store, "mail", 1, firstEnd)).toEqual(["mail-1"]); // its lease ran out: taken again, in its own slot
    // Leases of other owners hold no slot; a paused queue has nothing due.
    await store.complete("mail-1", { owner: PUSH_OWNER, fence: 2, result: "1", now: firstEnd });
    await store.complete("mail-2", { owner: PUSH_OWNER, fence: 1, result: "2", now: firstEnd });
    await store.claim("mail-3", { owner: "worker", ttlMs: 60_000, now: firstEnd });
    expect(await store.push.nextDueAt("mail", { now: firstEnd })).toBe(T + 60_000);
    await store.queues.pause("mail", { now: firstEnd });
    expect(await store.push.nextDueAt("mail", { now: firstEnd })).toBeNull();
  });

  test("no client takes a lease as the push owner: claim, claim-next and a next are refused, naming it; its endpoint still ends the lease it was given", async () => {
    const { store } = await freshStore();
    await enqueueJobs(store, "mail", 3);
    await store.push.put("mail", { url: URL_A, now: T });
    const [lease] = (await store.push.claim("mail", { limit: 1, now: T })).leases;
    const worker = await store.claim("mail-3", { owner: "worker", ttlMs: 60_000, now: T });
    const reserved = /owner "push" is the server's own, for the leases of push delivery/;
    const refusals = [
      () => store.claim("mail-2", { owner: PUSH_OWNER, ttlMs: 60_000, now: T }),
      () => store.claimNext("mail", { owner: PUSH_OWNER, ttlMs: 60_000, limit: 5, now: T }),
      () => store.complete("mail-1", { owner: PUSH_OWNER, fence: lease!.fence, result: "1", next: { limit: 1, ttlMs: 60_000 }, now: T }),
      () => store.fail("mail-1", { owner: PUSH_OWNER, fence: lease!.fence, error: "no", next: { limit: 1, ttlMs: 60_000 }, now: T }),
      () => store.completeMany({ owner: PUSH_OWNER, leases: [{ id: "mail-1", fence: lease!.fence, result: "1" }], next: { queue: "mail", limit: 1, ttlMs: 60_000 }, now: T }),
    ];
    for (const call of refusals) {
      const refused = call();
      await expect(refused).rejects.toBeInstanceOf(InvalidArgument);
      await expect(refused).rejects.toThrow(reserved);
    }
    // Nothing changed: mail-1 is still push's first lease, mail-2 waits, the worker's lease holds.
    expect(await store.get("mail-1", { now: T })).toMatchObject({ status: "leased", owner: PUSH_OWNER, fence: 1 });
    expect(await store.get("mail-2", { now: T })).toMatchObject({ status: "queued", owner: null, fence: 0 });
    expect(await store.get("mail-3", { now: T })).toMatchObject({ status: "leased", owner: "worker", fence: worker.fence });
    // The endpoint renews and completes with the owner and fence it was given.
    expect(await store.renew("mail-1", { owner: PUSH_OWNER, fence: 1, ttlMs: 60_000, now: T + 1 })).toEqual({ until: T + 60_001 });
    expect((await store.complete("mail-1", { owner: PUSH_OWNER, fence: 1, result: "1", now: T + 2 })).changed).toBe(true);
  });

  test("the push claim finds the queue's endpoint by its primary key, and counts its pushed leases in the index of lease ends", async () => {
    const { rows } = await freshStore();
    const statement = claimToPush("q", T, 10, "test-clock");
    const plan = (await rows(`EXPLAIN QUERY PLAN ${statement.sql}`, statement.args)).map((row) => String(row.detail));
    const endpoint = plan.filter((detail) => detail.includes("push_endpoints") || / p USING/.test(detail));
    expect(endpoint.length).toBeGreaterThan(0);
    for (const line of endpoint) expect(line).toMatch(/^SEARCH p USING INDEX sqlite_autoindex_push_endpoints_1 \(queue=\?\)$/);
    expect(plan.filter((detail) => /until>\?/.test(detail))).toEqual(expect.arrayContaining([expect.stringMatching(/^SEARCH jobs USING (COVERING )?INDEX jobs_held_by_until \(queue=\? AND until>\?\)$/)]));
    expect(plan.filter((detail) => /^SCAN jobs/.test(detail))).toEqual([]);
  });

  describe("deliveries", () => {
    test("each is an event of its job with its outcome, status and time, counted by outcome with the pushed leases in flight", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "mail", 3);
      await store.push.put("mail", { url: URL_A, now: T });
      const [first, second] = (await store.push.claim("mail", { limit: 2, now: T })).leases;
      await store.push.record({ lease: first!, outcome: "success", status: 200, durationMs: 12, error: null, at: T + 12 });
      await store.push.record({ lease: second!, outcome: "failure", status: 500, durationMs: 30, error: "the endpoint answered 500", at: T + 30 });
      await store.push.record({ lease: second!, outcome: "timeout", status: null, durationMs: 1_000, error: "no answer", at: T + 40 });
      // A delivery's status and time are its own fields; it reports no progress.
      const events = (await store.events("mail-2")).items.map(({ kind, action, owner, fence, error, httpStatus, durationMs, progress, at }) => ({ kind, action, owner, fence, error, httpStatus, durationMs, progress, at }));
      expect(events).toEqual([
        { kind: "enqueued", action: null, owner: null, fence: null, error: null, httpStatus: null, durationMs: null, progress: null, at: T },
        { kind: "claimed", action: null, owner: PUSH_OWNER, fence: 1, error: null, httpStatus: null, durationMs: null, progress: null, at: T },
        { kind: "pushed", action: "failure", owner: PUSH_OWNER, fence: 1, error: "the endpoint answered 500", httpStatus: 500, durationMs: 30, progress: null, at: T + 30 },
        { kind: "pushed", action: "timeout", owner: PUSH_OWNER, fence: 1, error: "no answer", httpStatus: null, durationMs: 1_000, progress: null, at: T + 40 },
      ]);
      const none = { count: 0, durationMs: 0 };
      expect(await store.push.stats({ now: T + 50 })).toEqual([{
        queue: "mail",
        inFlight: 2,
        deliveries: { success: { count: 1, durationMs: 12 }, accepted: none, failure: { count: 1, durationMs: 30 }, timeout: { count: 1, durationMs: 1_000 }, unreachable: none },
      }]);
      // The counts outlive the endpoint and the jobs' events.
      await store.push.delete("mail");
      expect((await store.push.stats({ now: T + 50 }))[0]?.deliveries.success).toEqual({ count: 1, durationMs: 12 });
    });

    test("stats show a pushed queue without deliveries at zero, and leave out an outcome this version does not name", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await enqueueJobs(store, "mail", 1);
      await store.push.put("mail", { url: URL_A, now: T });
      await store.push.put("news", { url: URL_A, now: T });
      expect(await pushed(store, "mail", 1)).toEqual(["mail-1"]); // in flight, not yet delivered
      const none = { count: 0, durationMs: 0 };
      const zero = { success: none, accepted: none, failure: none, timeout: none, unreachable: none };
      expect(await store.push.stats({ now: T })).toEqual([{ queue: "mail", inFlight: 1, deliveries: zero }, { queue: "news", inFlight: 0, deliveries: zero }]);
      // Counts a newer server wrote on the same database, under outcomes this one does not know.
      for (const outcome of ["redirected", "constructor", "toString"]) await fresh.rows("INSERT INTO push_counts (queue, outcome, deliveries, duration_ms) VALUES (?, ?, 1, 5)", ["news", outcome]);
      expect(await store.push.stats({ now: T })).toEqual([{ queue: "mail", inFlight: 1, deliveries: zero }, { queue: "news", inFlight: 0, deliveries: zero }]);
    });
  });
}
