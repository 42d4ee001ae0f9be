import { type Client, createClient } from "@libsql/client";
import { describe, expect, onTestFinished, test } from "vitest";
import { type LeaseStore, type QueueLimits } from "../../src/index.ts";
import { noteVerbs } from "../../src/store/note.ts";
import { startServer } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";
import { claimOver, RACE_TOKEN, type RaceLease, racers } from "./racers.ts";

// The per-key limits of a queue (issue 29) under the races that prove the
// queue's own limits (test/store/races.test.ts): 4 OS processes on one file,
// and 64 concurrent claim-nexts over HTTP on the Node server. A key never has
// more than maxLeasedPerKey current leases, an ordered key never two, and its
// jobs are claimed in the order they were enqueued; a key's bucket never hands
// out more than burst + rate x elapsed (on the real clock, a token of slack).

const T = 1_000_000;
const TTL = 60_000;
const QUEUE = "work";
const KEYS = ["a", "b", "c", "d", "e", "f"];

/** The id of the `i`th job of `key`. */
const jobOf = (key: string, i: number) => `${String(i).padStart(3, "0")}-${key}`;

const keyOf = (id: string) => id.split("-")[1]!;

/** `each` jobs of every key of `keys`, enqueued in turns (000-a, 000-b, ..., 001-a, ...): ids in order are the enqueue order. */
async function enqueueKeyed(store: LeaseStore, keys: string[], each: number, now: number): Promise<void> {
  const jobs = Array.from({ length: each }, (_, i) => keys.map((key) => ({ id: jobOf(key, i), key }))).flat();
  await store.enqueueMany(QUEUE, { jobs, now });
}

/** How many of `ids` each key of `keys` has. */
function perKey(keys: string[], ids: string[]): Record<string, number> {
  return Object.fromEntries(keys.map((key) => [key, ids.filter((id) => keyOf(id) === key).length]));
}

/** The current leases of each key of `keys` in the queue at `now`, read from the jobs table. */
async function leasesByKey(reader: Client, keys: string[], now: number): Promise<Record<string, number>> {
  const { rows } = await reader.execute({
    sql: "SELECT key, count(*) AS n FROM jobs WHERE queue = ? AND key IS NOT NULL AND done = 0 AND owner IS NOT NULL AND until > ? GROUP BY key",
    args: [QUEUE, now],
  });
  const counted = new Map(rows.map((row) => [row.key as string, row.n as number]));
  return Object.fromEntries(keys.map((key) => [key, counted.get(key) ?? 0]));
}

/** A connection of the test's own to the file at `url`, closed when the test ends. */
function readerOf(url: string): Client {
  const reader = createClient({ url });
  onTestFinished(() => reader.close());
  return reader;
}

/**
 * Runs `race` while reading the jobs table over and over, and answers what the
 * race answered with the most current leases a key had in any read: the
 * moments between a round's claims, not only after the round.
 */
async function watched<R>(reader: Client, keys: string[], now: () => number, race: Promise<R>): Promise<{ answer: R; most: number }> {
  let settled = false;
  let most = 0;
  const reading = (async () => {
    do {
      most = Math.max(most, ...Object.values(await leasesByKey(reader, keys, now())));
      // A file's read answers without a turn of the event loop: give the race's answers theirs.
      await new Promise((resolve) => setImmediate(resolve));
    } while (!settled);
  })();
  const answer = await race.finally(() => (settled = true));
  await reading;
  return { answer, most };
}

/** The most leases a key's bucket of `burst` tokens refilled at `ratePerSecond` may have handed out `elapsedMs` after it started full, with a token of slack. */
const bucketMost = (burst: number, ratePerSecond: number, elapsedMs: number) => burst + Math.floor((ratePerSecond * elapsedMs) / 1000) + 1;

/** That each key of `keys` was handed out more than its bucket's burst (it refilled), and fewer than its `each` jobs (the bucket, not the jobs, ran out). */
function expectBucketBound(claimed: string[], keys: string[], burst: number, each: number): void {
  for (const [key, n] of Object.entries(perKey(keys, claimed))) {
    expect(n, key).toBeGreaterThan(burst);
    expect(n, key).toBeLessThan(each);
  }
}

/** A Node server on the file at `url`, with the race's token, stopped when the test ends. */
async function raceServer(url: string, clock?: () => number) {
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: [RACE_TOKEN] }, clock });
  onTestFinished(() => server.stop());
  return server;
}

/** A fresh file whose queue has `limits` (set at T) and `each` jobs of every key of `keys`, and a reader of its own. */
async function keyedQueue(limits: QueueLimits, keys: string[], each: number) {
  const fresh = await freshStore();
  await fresh.store.queues.set(QUEUE, { ...limits, now: T });
  await enqueueKeyed(fresh.store, keys, each, T);
  return { ...fresh, reader: readerOf(fresh.url) };
}

/** That each key of `keys` had its `each` jobs claimed in the order they were enqueued. */
function expectEnqueueOrder(claimOrder: string[], keys: string[], each: number): void {
  expect(claimOrder).toHaveLength(keys.length * each);
  for (const key of keys) {
    expect(claimOrder.filter((id) => keyOf(id) === key), key).toEqual(Array.from({ length: each }, (_, i) => jobOf(key, i)));
  }
}

/** 64 claim-nexts of the queue at once on `server`, owners c0 to c63 asking for 1 to 3 jobs: the leases taken, with their owners. */
async function claim64(serverUrl: string): Promise<{ owner: string; id: string; fence: number }[]> {
  const answers = await Promise.all(Array.from({ length: 64 }, (_, i) => claimOver(serverUrl, { queue: QUEUE, owner: `c${i}`, limit: 1 + (i % 3), ttlMs: TTL })));
  return answers.flatMap((answer, i) => answer.leases.map((lease: RaceLease) => ({ owner: `c${i}`, id: lease.job.id, fence: lease.fence })));
}

describe("maxLeasedPerKey under 64 concurrent HTTP claimers", () => {
  test("64 claim-nexts at once against maxLeasedPerKey 2 never leave a key more than 2 current leases, and fill each key's 2, round after round", async () => {
    const { store, url, snapshot, reader } = await keyedQueue({ maxLeasedPerKey: 2 }, KEYS, 8);
    const server = await raceServer(url, () => T);
    const held: { owner: string; id: string; fence: number }[] = [];
    const completed: string[] = [];
    for (let round = 0; completed.length < 48 && round < 40; round++) {
      const { answer: taken, most } = await watched(reader, KEYS, () => T, claim64(server.url));
      held.push(...taken);
      const room = Object.fromEntries(KEYS.map((key) => [key, Math.min(2, 8 - perKey([key], completed)[key]!)]));
      expect(most, `round ${round}`).toBeLessThanOrEqual(2);
      expect(perKey(KEYS, held.map((lease) => lease.id)), `round ${round}`).toEqual(room); // each key's limit reached, never exceeded
      expect(await leasesByKey(reader, KEYS, T), `round ${round}`).toEqual(room);
      for (const lease of held.splice(0, 2 + (round % 3))) {
        expect(await noteVerbs(store).complete(lease.id, lease.owner, lease.fence, T, "ok")).toBe(true);
        completed.push(lease.id);
      }
    }
    expect(completed).toHaveLength(48);
    expect(Object.values(await snapshot()).filter((row) => row.done !== 1 || row.fence !== 1 || row.attempts !== 1)).toEqual([]); // each claimed once
  });
});

describe("orderedByKey under 64 concurrent HTTP claimers", () => {
  test("64 claim-nexts at once in an ordered queue hold at most one job of a key, and take each key's jobs in the order they were enqueued", async () => {
    const { store, url, snapshot, reader } = await keyedQueue({ orderedByKey: true }, KEYS, 10);
    const server = await raceServer(url, () => T);
    const held: { owner: string; id: string; fence: number }[] = [];
    const claimOrder: string[] = [];
    for (let round = 0; claimOrder.length < 60 && round < 40; round++) {
      const { answer: taken, most } = await watched(reader, KEYS, () => T, claim64(server.url));
      held.push(...taken);
      claimOrder.push(...taken.map((lease) => lease.id));
      const heldByKey = perKey(KEYS, held.map((lease) => lease.id));
      expect(most, `round ${round}`).toBeLessThanOrEqual(1);
      expect(Math.max(...Object.values(heldByKey)), `round ${round}`).toBe(1);
      expect(await leasesByKey(reader, KEYS, T), `round ${round}`).toEqual(heldByKey);
      // All but the newest lease end: its key stays full into the next round.
      for (const lease of held.splice(0, held.length - 1)) expect(await noteVerbs(store).complete(lease.id, lease.owner, lease.fence, T, "ok")).toBe(true);
    }
    expectEnqueueOrder(claimOrder, KEYS, 10);
    expect(Object.values(await snapshot()).filter((row) => row.fence !== 1 || row.attempts !== 1)).toEqual([]);
  });
});

describe("a key's rate limit under 64 concurrent HTTP claimers, on the real clock", () => {
  test("64 claim-nexts at once, round after round for 3 s, never take more of a key than keyBurst + elapsed x keyRatePerSecond", async () => {
    const keys = KEYS.slice(0, 4);
    const { store, url } = await freshStore();
    await store.queues.set(QUEUE, { keyRatePerSecond: 5, keyBurst: 3, now: Date.now() });
    await enqueueKeyed(store, keys, 40, Date.now());
    const server = await raceServer(url);
    const reader = readerOf(url);
    const claimed: string[] = [];
    const start = Date.now();
    for (let round = 0; Date.now() - start < 3_000; round++) {
      claimed.push(...(await claim64(server.url)).map((lease) => lease.id));
      const elapsedMs = Date.now() - start;
      for (const [key, n] of Object.entries(perKey(keys, claimed))) expect(n, `${key}, round ${round}`).toBeLessThanOrEqual(bucketMost(3, 5, elapsedMs));
    }
    expectBucketBound(claimed, keys, 3, 40);
    expect(await leasesByKey(reader, keys, Date.now())).toEqual(perKey(keys, claimed)); // every lease still held: the rounds took no job twice
    expect(new Set(claimed).size).toBe(claimed.length);
  });
});

// Skipped under mutation testing: a mutant is switched on inside the test
// process only, so these child processes would always run the unmutated code.
describe.skipIf(process.env.FENCELEASE_IN_PROCESS_ONLY === "1")("per-key limits between OS processes, each with its own connection", () => {
  const owners = ["p0", "p1", "p2", "p3"];

  /** Each racer completes one of its own leases in `held`, if it has one, all at once; answers the ids completed. */
  async function completeOneEach(race: Awaited<ReturnType<typeof racers>>, held: { racer: number; id: string; fence: number }[]): Promise<string[]> {
    const mine = owners.map((_, racer) => held.find((lease) => lease.racer === racer));
    const commands = mine.map((lease) => (lease ? `complete ${lease.id} ${lease.fence}` : "claim-next none 1"));
    const answers = await Promise.all(commands.map((command, racer) => race.one(racer, command)));
    const done: string[] = [];
    for (const [racer, lease] of mine.entries()) {
      if (lease === undefined) continue;
      expect(answers[racer]).toBe(true);
      held.splice(held.indexOf(lease), 1);
      done.push(lease.id);
    }
    return done;
  }

  test("4 processes claiming from a queue with maxLeasedPerKey 2 never leave a key more than 2 current leases, and fill each key's 2", async () => {
    const { url, snapshot, reader } = await keyedQueue({ maxLeasedPerKey: 2 }, KEYS, 10);
    const race = await racers(url, owners, { now: T, ttlMs: TTL });
    const held: { racer: number; id: string; fence: number }[] = [];
    const completed: string[] = [];
    for (let round = 0; completed.length < 60 && round < 40; round++) {
      const { answer, most } = await watched(reader, KEYS, () => T, race.all(`claim-next ${QUEUE} ${3 + (round % 3)}`)); // 12 to 20 asked for
      for (const [racer, leases] of (answer as [string, number][][]).entries()) for (const [id, fence] of leases) held.push({ racer, id, fence });
      const room = Object.fromEntries(KEYS.map((key) => [key, Math.min(2, 10 - perKey([key], completed)[key]!)]));
      expect(most, `round ${round}`).toBeLessThanOrEqual(2);
      expect(perKey(KEYS, held.map((lease) => lease.id)), `round ${round}`).toEqual(room); // each key's limit reached, never exceeded
      expect(await leasesByKey(reader, KEYS, T), `round ${round}`).toEqual(room);
      completed.push(...(await completeOneEach(race, held)));
    }
    await race.stop();
    expect(completed).toHaveLength(60);
    expect(Object.values(await snapshot()).filter((row) => row.done !== 1 || row.fence !== 1 || row.attempts !== 1)).toEqual([]);
  });

  test("4 processes claiming from an ordered queue hold at most one job of a key, and take each key's jobs in the order they were enqueued", async () => {
    const keys = KEYS.slice(0, 4);
    const { url, snapshot, reader } = await keyedQueue({ orderedByKey: true }, keys, 10);
    const race = await racers(url, owners, { now: T, ttlMs: TTL });
    const held: { racer: number; id: string; fence: number }[] = [];
    const claimOrder: string[] = [];
    for (let round = 0; claimOrder.length < 40 && round < 40; round++) {
      const { answer, most } = await watched(reader, keys, () => T, race.all(`claim-next ${QUEUE} ${1 + (round % 3)}`)); // 4 to 12 asked for
      for (const [racer, leases] of (answer as [string, number][][]).entries()) {
        for (const [id, fence] of leases) {
          held.push({ racer, id, fence });
          claimOrder.push(id);
        }
      }
      const heldByKey = perKey(keys, held.map((lease) => lease.id));
      expect(most, `round ${round}`).toBeLessThanOrEqual(1);
      expect(Math.max(...Object.values(heldByKey)), `round ${round}`).toBe(1);
      expect(await leasesByKey(reader, keys, T), `round ${round}`).toEqual(heldByKey);
      await completeOneEach(race, held); // a racer holding two keeps one into the next round
    }
    await race.stop();
    expectEnqueueOrder(claimOrder, keys, 10);
    expect(Object.values(await snapshot()).filter((row) => row.fence !== 1 || row.attempts !== 1)).toEqual([]);
  });

  test("4 processes claiming on the real clock for 3 s never take more of a key than keyBurst + elapsed x keyRatePerSecond", async () => {
    const keys = KEYS.slice(0, 4);
    const { store, url } = await freshStore();
    await store.queues.set(QUEUE, { keyRatePerSecond: 5, keyBurst: 3, now: Date.now() });
    await enqueueKeyed(store, keys, 40, Date.now());
    const reader = readerOf(url);
    const race = await racers(url, owners, { now: T, ttlMs: TTL });
    const claimed: string[] = [];
    const start = Date.now();
    for (let round = 0; Date.now() - start < 3_000; round++) {
      const taken = (await race.all(`claim-next ${QUEUE} ${3 + (round % 3)} real`)) as [string, number][][]; // 12 to 20 asked for, a full bucket of every key or more
      claimed.push(...taken.flat().map(([id]) => id));
      const elapsedMs = Date.now() - start;
      for (const [key, n] of Object.entries(perKey(keys, claimed))) expect(n, `${key}, round ${round}`).toBeLessThanOrEqual(bucketMost(3, 5, elapsedMs));
    }
    await race.stop();
    expectBucketBound(claimed, keys, 3, 40);
    expect(await leasesByKey(reader, keys, Date.now())).toEqual(perKey(keys, claimed));
    expect(new Set(claimed).size).toBe(claimed.length);
  });
});
