import { createClient } from "@libsql/client";
import { describe, expect, test } from "vitest";
import { noteVerbs } from "../../src/index.ts";
import { openStore, startServer } from "../../src/node.ts";
import { NO_KEY_LIMITS } from "../contract/queues.contract.ts";
import { freshStore } from "../fresh-db.ts";
import { claimOver as claimOn, racers as racersOn } from "./racers.ts";

const T = 1_000_000;
const TTL = 60_000;

describe("claimMany", () => {
  test("32 owners racing for one job: exactly one fence, 31 nulls, round after round", async () => {
    const { store, snapshot } = await freshStore();
    const owners = Array.from({ length: 32 }, (_, i) => `owner-${i}`);
    for (let round = 0; round < 20; round++) {
      await store.enqueue(`round-${round}`, { now: T });
      const fences = await noteVerbs(store).claimMany(`round-${round}`, owners, T, TTL);
      expect(fences).toHaveLength(32);
      expect(fences.filter((fence) => fence === 1)).toHaveLength(1);
      expect(fences.filter((fence) => fence === null)).toHaveLength(31);
      expect((await snapshot())[`round-${round}`]).toMatchObject({ owner: owners[fences.indexOf(1)], fence: 1, attempts: 1 });
    }
  });

  test("32 owners, each on its own connection to the file, racing for one job: exactly one fence, round after round", async () => {
    const { store, url, snapshot } = await freshStore();
    const owners = Array.from({ length: 32 }, (_, i) => `owner-${i}`);
    const stores = await Promise.all(owners.map(() => openStore({ url, migrations: false })));
    try {
      for (let round = 0; round < 20; round++) {
        await store.enqueue(`round-${round}`, { now: T });
        const fences = await Promise.all(owners.map((owner, i) => noteVerbs(stores[i]!).claim(`round-${round}`, owner, T, TTL)));
        expect(fences.filter((fence) => fence === 1)).toHaveLength(1);
        expect(fences.filter((fence) => fence === null)).toHaveLength(31);
        expect((await snapshot())[`round-${round}`]).toMatchObject({ owner: owners[fences.indexOf(1)], fence: 1, attempts: 1 });
      }
    } finally {
      for (const other of stores) other.close();
    }
  });

  test("answers in input order, and the winner is the owner the row names", async () => {
    const { store } = await freshStore();
    await store.enqueue("job-1", { now: T });
    const owners = ["a", "b", "c", "d"];
    const fences = await noteVerbs(store).claimMany("job-1", owners, T, TTL);
    const winner = owners[fences.findIndex((fence) => fence !== null)];
    expect(await store.get("job-1")).toMatchObject({ owner: winner, fence: 1 });

    const again = await noteVerbs(store).claimMany("job-1", owners, T + TTL, TTL); // the lease has expired: one new winner
    expect(again.filter((fence) => fence === 2)).toHaveLength(1);
    expect(again.filter((fence) => fence === null)).toHaveLength(3);
    expect(await store.get("job-1")).toMatchObject({ owner: owners[again.indexOf(2)], fence: 2, attempts: 2 });
  });

  test("refuses a bad ttl or owner before any claim runs", async () => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: T });
    const before = await snapshot();
    await expect(noteVerbs(store).claimMany("job-1", ["a", "b"], T, 0)).rejects.toThrow(RangeError);
    await expect(noteVerbs(store).claimMany("job-1", ["a", ""], T, TTL)).rejects.toThrow(RangeError);
    expect(await snapshot()).toEqual(before);
  });

  test.each([
    ["id", ["", ["a"], T, TTL], 'id must be a non-empty string of printable text, got ""'],
    ["owner", ["job-1", ["a", ""], T, TTL], 'owners[1] must be a non-empty string of printable text, got ""'],
    ["now", ["job-1", ["a"], -1, TTL], "now must be integer milliseconds since the epoch, got -1"],
    ["ttlMs", ["job-1", ["a"], T, 0], "ttlMs must be a positive safe integer, got 0"],
  ] as const)("refuses a bad %s by name, and nothing changes", async (_, args, message) => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: T });
    const before = await snapshot();
    const [id, owners, now, ttl] = args;
    await expect(noteVerbs(store).claimMany(id, owners, now, ttl)).rejects.toMatchObject({ name: "InvalidArgument", message });
    expect(await snapshot()).toEqual(before);
  });

  test("answers [] for no owners, and changes nothing", async () => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: T });
    const before = await snapshot();
    expect(await noteVerbs(store).claimMany("job-1", [], T, TTL)).toEqual([]);
    expect(await snapshot()).toEqual(before);
  });
});

/** The current leases of `queue` at T, counted over a connection of the test's own. */
async function currentLeases(url: string, queue: string): Promise<number> {
  const sql = createClient({ url });
  try {
    const { rows } = await sql.execute({ sql: "SELECT count(*) AS n FROM jobs WHERE queue = ? AND done = 0 AND owner IS NOT NULL AND until > ?", args: [queue, T] });
    return rows[0]!.n as number;
  } finally {
    sql.close();
  }
}

/** A claim-next of queue "work" over HTTP, on the race server at `url`. */
const claimOver = (url: string, owner: string, limit: number) => claimOn(url, { queue: "work", owner, limit, ttlMs: TTL });

/** The leases a bucket of `burst` tokens refilled at `ratePerSecond` hands out at most in `elapsedMs`: exactly that many when claimers always ask for more. */
const bucketBound = (burst: number, ratePerSecond: number, elapsedMs: number) => burst + Math.floor((elapsedMs * ratePerSecond) / 1000);

describe("maxLeased under 64 concurrent HTTP claimers", () => {
  test("64 claim-nexts at once on the Node server against maxLeased 5 never leave more than 5 current leases, round after round", async () => {
    const { store, url } = await freshStore();
    for (let i = 0; i < 200; i++) await store.enqueue(`job-${i}`, { queue: "work", now: T });
    await store.queues.set("work", { maxLeased: 5, now: T });
    const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: ["race"] }, clock: () => T });
    try {
      const claimNext = (owner: string, limit: number) => claimOver(server.url, owner, limit);
      const held: { owner: string; id: string; fence: number }[] = [];
      for (let round = 0; round < 10; round++) {
        const answers = await Promise.all(Array.from({ length: 64 }, (_, i) => claimNext(`c${i}`, 1 + (i % 3))));
        const taken = answers.flatMap((answer, i) => answer.leases.map((lease) => ({ owner: `c${i}`, id: lease.job.id, fence: lease.fence })));
        held.push(...taken);
        expect(held, `round ${round}`).toHaveLength(5); // the limit exactly reached, never exceeded
        expect(await currentLeases(url, "work"), `round ${round}`).toBe(5);
        for (const lease of held.splice(0, 1 + (round % 3))) expect(await noteVerbs(store).complete(lease.id, lease.owner, lease.fence, T, "ok")).toBe(true);
      }
    } finally {
      await server.stop();
    }
  });
});

describe("the rate limit under 64 concurrent HTTP claimers", () => {
  test("64 claim-nexts at once at a frozen clock hand out exactly burst 5 leases; as the clock moves, exactly burst + floor(elapsed x rate) in all", async () => {
    const { store, url } = await freshStore();
    await store.enqueueMany("work", { jobs: Array.from({ length: 300 }, (_, i) => ({ id: `job-${i}` })), now: T });
    await store.queues.set("work", { ratePerSecond: 3, burst: 5, now: T });
    let now = T;
    const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: ["race"] }, clock: () => now });
    try {
      let handedOut = 0;
      for (const [round, elapsedMs] of [0, 0, 0, 700, 1_400, 2_100, 2_800, 3_500, 4_200, 30_000].entries()) {
        now = T + elapsedMs;
        const answers = await Promise.all(Array.from({ length: 64 }, (_, i) => claimOver(server.url, `c${i}`, 1 + (i % 3))));
        handedOut += answers.reduce((sum, answer) => sum + answer.leases.length, 0);
        // Round 9 comes after a long idle: the bucket refilled up to its burst, no more.
        const bound = round === 9 ? bucketBound(5, 3, 4_200) + 5 : bucketBound(5, 3, elapsedMs);
        expect(handedOut, `round ${round}, ${elapsedMs} ms`).toBe(bound);
      }
      expect(await currentLeases(url, "work")).toBe(handedOut);
    } finally {
      await server.stop();
    }
  });
});

/** Racer processes on the file at `url`, at T. */
const racers = (url: string, owners: string[]) => racersOn(url, owners, { now: T, ttlMs: TTL });

// Skipped under mutation testing: a mutant is switched on inside the test
// process only, so these child processes would always run the unmutated code.
describe.skipIf(process.env.FENCELEASE_IN_PROCESS_ONLY === "1")("races between OS processes, each with its own connection", () => {
  const owners = ["p0", "p1", "p2", "p3"];

  test("4 processes claiming the same job at once: one winner per round, and the row names it", async () => {
    const { store, url, snapshot } = await freshStore();
    const rounds = 200;
    for (let round = 0; round < rounds; round++) await store.enqueue(`round-${round}`, { now: T });
    const race = await racers(url, owners);
    const winners: string[] = [];
    for (let round = 0; round < rounds; round++) {
      const fences = await race.all(`claim round-${round}`);
      expect(fences.filter((fence) => fence === 1), `round ${round}`).toHaveLength(1);
      expect(fences.filter((fence) => fence === null), `round ${round}`).toHaveLength(3);
      winners.push(owners[fences.indexOf(1)]!);
    }
    await race.stop();
    const rows = await snapshot();
    for (const [round, winner] of winners.entries()) {
      expect(rows[`round-${round}`]).toMatchObject({ owner: winner, fence: 1, attempts: 1 });
    }
  });

  test("4 processes taking from one queue of 1,000 jobs: every job claimed exactly once", async () => {
    const { url, snapshot } = await freshStore();
    const sql = createClient({ url });
    try {
      // One insert for all 1,000, so the set-up does not dwarf the race.
      await sql.execute(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
        INSERT INTO jobs (id, queue, run_at, created_at, updated_at) SELECT 'job-' || i, 'work', ${T}, ${T} + i, ${T} FROM n`);
    } finally {
      sql.close();
    }
    const race = await racers(url, owners);
    const claimedBy = new Map<string, string[]>();
    for (let step = 0; claimedBy.size < 1000 && step < 1000; step++) {
      const taken = (await race.all(`claim-next work ${1 + (step % 3)}`)) as [string, number][][];
      for (const [i, leases] of taken.entries()) {
        for (const [id, fence] of leases) {
          expect(fence).toBe(1);
          claimedBy.set(id, [...(claimedBy.get(id) ?? []), owners[i]!]);
        }
      }
    }
    expect(await race.all("claim-next work 5")).toEqual(owners.map(() => [])); // nothing left
    await race.stop();

    expect(claimedBy.size).toBe(1000);
    expect([...claimedBy.values()].filter((by) => by.length !== 1)).toEqual([]);
    for (const row of Object.values(await snapshot())) {
      expect(row).toMatchObject({ owner: claimedBy.get(row.id as string)![0], fence: 1, attempts: 1 });
    }
  });

  test("4 processes claiming from a queue with maxLeased 5 never leave more than 5 current leases", async () => {
    const { store, url } = await freshStore();
    for (let i = 0; i < 200; i++) await store.enqueue(`job-${i}`, { queue: "work", now: T });
    await store.queues.set("work", { maxLeased: 5, now: T });
    const race = await racers(url, owners);
    const held: { racer: number; id: string; fence: number }[] = [];
    for (let round = 0; round < 50; round++) {
      const taken = (await race.all(`claim-next work ${2 + (round % 3)}`)) as [string, number][][]; // 8 to 16 asked for
      for (const [racer, leases] of taken.entries()) for (const [id, fence] of leases) held.push({ racer, id, fence });
      expect(held, `round ${round}`).toHaveLength(5); // the limit exactly reached, never exceeded
      expect(await currentLeases(url, "work"), `round ${round}`).toBe(5);
      // Each racer completes one of its own leases, if it has one, all at once.
      const mine = owners.map((_, racer) => held.find((lease) => lease.racer === racer));
      const commands = mine.map((lease) => (lease ? `complete ${lease.id} ${lease.fence}` : "claim-next none 1"));
      const answers = await Promise.all(commands.map((command, racer) => race.one(racer, command)));
      for (const [racer, lease] of mine.entries()) {
        if (lease === undefined) continue;
        expect(answers[racer]).toBe(true);
        held.splice(held.indexOf(lease), 1);
      }
    }
    await race.stop();
    expect(await store.queues.get("work")).toEqual({ queue: "work", paused: false, maxLeased: 5, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
  });

  test("4 processes claiming from a queue with a rate limit: exactly burst 5 at a frozen clock, and never more than burst + floor(elapsed x rate)", async () => {
    const { store, url } = await freshStore();
    await store.enqueueMany("work", { jobs: Array.from({ length: 300 }, (_, i) => ({ id: `job-${i}` })), now: T });
    await store.queues.set("work", { ratePerSecond: 3, burst: 5, now: T });
    const race = await racers(url, owners);
    let handedOut = 0;
    for (let round = 0; round < 30; round++) {
      const elapsedMs = round < 3 ? 0 : (round - 2) * 700; // three rounds at T, then 700 ms a round
      const taken = (await race.all(`claim-next work ${2 + (round % 3)} ${T + elapsedMs}`)) as [string, number][][]; // 8 to 16 asked for
      handedOut += taken.flat().length;
      expect(handedOut, `round ${round}, ${elapsedMs} ms`).toBe(bucketBound(5, 3, elapsedMs));
    }
    await race.stop();
    expect(await currentLeases(url, "work")).toBe(handedOut);
  });
});
