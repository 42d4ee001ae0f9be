import { describe, expect, test } from "vitest";
import { cachedTokens } from "../../src/store/token-cache.ts";
import type { TokenStore } from "../../src/store/tokens.ts";
import { freshStore } from "../fresh-db.ts";

// cachedTokens over the real store.tokens of a fresh file database; `counted`
// counts the finds that reach the database and can hold one back, to put a
// revoke in the middle of it.

const T = 1_000_000;

function counted(tokens: TokenStore) {
  // gate holds a find back after its read; read() resolves once a held find has read.
  const reads = { count: 0, gate: null as Promise<void> | null, held: null as (() => void) | null };
  const store: TokenStore = {
    ...tokens,
    create: (token) => tokens.create(token),
    list: () => tokens.list(),
    revoke: (id) => tokens.revoke(id),
    async find(secret) {
      reads.count++;
      const found = await tokens.find(secret);
      reads.held?.();
      await reads.gate;
      return found;
    },
  };
  return { store, reads };
}

async function setup(options: { ttlMs?: number; maxEntries?: number } = {}) {
  const fresh = await freshStore();
  const clock = { now: T };
  const { store, reads } = counted(fresh.store.tokens);
  const cache = cachedTokens(store, { clock: () => clock.now, ...options });
  return { ...fresh, clock, reads, cache };
}

describe("cachedTokens", () => {
  test("a token found is answered from memory for ttlMs, then read again: a delete elsewhere is seen then", async () => {
    const { cache, reads, clock, exec } = await setup({ ttlMs: 5_000 });
    const { token, id } = await cache.create({ role: "reader", queues: ["*"] });
    expect(await cache.find(token)).toMatchObject({ id });
    await exec("DELETE FROM tokens"); // another process revokes it
    clock.now = T + 4_999;
    expect(await cache.find(token)).toMatchObject({ id });
    expect(reads.count).toBe(1);
    clock.now = T + 5_000;
    expect(await cache.find(token)).toBeNull();
    expect(reads.count).toBe(2);
  });

  test("a secret not found is not kept: each try reads the database", async () => {
    const { cache, reads } = await setup();
    for (let i = 0; i < 3; i++) expect(await cache.find("fl_guess")).toBeNull();
    expect(reads.count).toBe(3);
  });

  test("a revoke through it takes effect at once", async () => {
    const { cache } = await setup();
    const { token, id } = await cache.create({ role: "reader", queues: ["*"] });
    expect(await cache.find(token)).not.toBeNull();
    await cache.revoke(id);
    expect(await cache.find(token)).toBeNull();
  });

  test("a find that read the token before a revoke answered keeps nothing: the next find reads again and finds none", async () => {
    const { cache, reads } = await setup();
    const { token, id } = await cache.create({ role: "reader", queues: ["*"] });
    let release!: () => void;
    reads.gate = new Promise((resolve) => (release = resolve));
    const hasRead = new Promise<void>((resolve) => (reads.held = resolve));
    const reading = cache.find(token);
    await hasRead; // it has read the token, and is held before it answers
    await cache.revoke(id);
    release();
    expect(await reading).toMatchObject({ id }); // it began before the revoke
    reads.gate = null;
    expect(await cache.find(token)).toBeNull();
    expect(reads.count).toBe(2);
  });

  test("a clock stepped back behind a read does not stretch the trust: the next find reads again", async () => {
    const { cache, reads, clock } = await setup({ ttlMs: 5_000 });
    const { token, id } = await cache.create({ role: "reader", queues: ["*"] });
    expect(await cache.find(token)).toMatchObject({ id });
    clock.now = T - 60_000; // an NTP correction of a minute back: ttlMs would otherwise last 65 s
    expect(await cache.find(token)).toMatchObject({ id });
    expect(reads.count).toBe(2);
    expect(await cache.find(token)).toMatchObject({ id }); // kept again from this read, on the corrected clock
    expect(reads.count).toBe(2);
  });

  test("at most maxEntries are kept, the oldest dropped first", async () => {
    const { cache, reads } = await setup({ maxEntries: 2 });
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await cache.create({ role: "reader", queues: ["*"] }));
    for (const { token } of made) await cache.find(token);
    expect(reads.count).toBe(3);
    await cache.find(made[2]!.token);
    await cache.find(made[1]!.token);
    expect(reads.count).toBe(3);
    await cache.find(made[0]!.token);
    expect(reads.count).toBe(4);
  });

  test("ttlMs 0 keeps nothing", async () => {
    const { cache, reads } = await setup({ ttlMs: 0 });
    const { token } = await cache.create({ role: "reader", queues: ["*"] });
    await cache.find(token);
    await cache.find(token);
    expect(reads.count).toBe(2);
  });

  test("ttlMs 0 keeps nothing, even when the clock steps back", async () => {
    const { cache, reads, clock } = await setup({ ttlMs: 0 });
    const { token } = await cache.create({ role: "reader", queues: ["*"] });
    await cache.find(token);
    clock.now = T - 1;
    await cache.find(token);
    expect(reads.count).toBe(2);
  });

  test("a token read again after its ttlMs is kept as the newest: room is made by dropping the one read longest ago", async () => {
    const { cache, reads, clock } = await setup({ ttlMs: 5_000, maxEntries: 2 });
    const [a, b, c] = [await cache.create({ role: "reader", queues: ["*"] }), await cache.create({ role: "reader", queues: ["*"] }), await cache.create({ role: "reader", queues: ["*"] })];
    await cache.find(a.token);
    clock.now = T + 1_000;
    await cache.find(b.token);
    clock.now = T + 5_000; // a's entry has ended, b's has not
    await cache.find(a.token);
    await cache.find(c.token); // makes room: b goes, a read again just now stays
    expect(reads.count).toBe(4);
    expect(await cache.find(a.token)).toMatchObject({ id: a.id });
    expect(reads.count).toBe(4);
    expect(await cache.find(b.token)).toMatchObject({ id: b.id });
    expect(reads.count).toBe(5);
  });

  test("a revoke drops only the revoked token: the others are still answered from memory", async () => {
    const { cache, reads } = await setup();
    const [gone, kept] = [await cache.create({ role: "reader", queues: ["*"] }), await cache.create({ role: "reader", queues: ["*"] })];
    await cache.find(gone.token);
    await cache.find(kept.token);
    await cache.revoke(gone.id);
    expect(await cache.find(kept.token)).toMatchObject({ id: kept.id });
    expect(reads.count).toBe(2);
    expect(await cache.find(gone.token)).toBeNull();
    expect(reads.count).toBe(3);
  });

  test("create and list go to the store: list answers the tokens made, without secrets", async () => {
    const { cache, store } = await setup();
    const made = await cache.create({ role: "worker", queues: ["mail"], name: "mailer", now: T });
    const { token: _secret, ...shown } = made;
    expect(await cache.list()).toEqual([shown]);
    expect(await store.tokens.list()).toEqual([shown]);
  });

  test.each([
    [{ ttlMs: -1 }, "ttlMs must be a whole number of ms, 0 or more, got -1"],
    [{ ttlMs: 1.5 }, "ttlMs must be a whole number of ms, 0 or more, got 1.5"],
    [{ ttlMs: Number.NaN }, "ttlMs must be a whole number of ms, 0 or more, got NaN"],
    [{ maxEntries: 0 }, "maxEntries must be a positive whole number, got 0"],
    [{ maxEntries: 2.5 }, "maxEntries must be a positive whole number, got 2.5"],
    [{ maxEntries: Number.POSITIVE_INFINITY }, "maxEntries must be a positive whole number, got Infinity"],
  ])("refuses %o with a RangeError that names it", async (options, message) => {
    const { store } = await freshStore();
    expect(() => cachedTokens(store.tokens, options)).toThrow(new RangeError(message));
  });

  test("maxEntries 1 keeps the one token read last", async () => {
    const { cache, reads } = await setup({ maxEntries: 1 });
    const [a, b] = [await cache.create({ role: "reader", queues: ["*"] }), await cache.create({ role: "reader", queues: ["*"] })];
    await cache.find(a.token);
    await cache.find(a.token);
    expect(reads.count).toBe(1);
    await cache.find(b.token);
    await cache.find(b.token);
    expect(reads.count).toBe(2);
    await cache.find(a.token);
    expect(reads.count).toBe(3);
  });
});
