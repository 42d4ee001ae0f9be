import { describe, expect, test } from "vitest";
import { freshApp, T } from "../fresh-app.ts";

// GET /v1/queues/{queue}/keys on the real app: a queue's keys with open jobs,
// paged, with what each has waiting and leased and why it holds jobs back;
// and each queue's top keys in /v1/stats and /metrics. Keyed jobs are
// enqueued through the store, beside a bystander queue with keys of its own.

const TTL = 30_000;

/** An app whose queue q has keys a (3 jobs, one leased), b (1) and c (2), at most one lease a key, and whose queue other has key a (5 jobs). */
async function withKeys() {
  const fresh = await freshApp();
  await fresh.store.queues.set("q", { maxLeasedPerKey: 1, now: T });
  const jobs = (queue: string, key: string, count: number) => Array.from({ length: count }, (_, i) => ({ id: `${queue}:${key}-${i + 1}`, key }));
  await fresh.store.enqueueMany("q", { jobs: [...jobs("q", "a", 3), ...jobs("q", "b", 1), ...jobs("q", "c", 2)], now: T });
  await fresh.store.enqueueMany("other", { jobs: jobs("other", "a", 5), now: T });
  expect((await fresh.call("POST", "/v1/jobs/q:a-1/claim", { owner: "W", ttlMs: TTL })).status).toBe(200);
  return fresh;
}

describe("GET /v1/queues/:queue/keys", () => {
  test("answers the queue's keys in key order, a page at a time, with waiting, leased and heldBack, and none of another queue's", async () => {
    const { call, snapshot } = await withKeys();
    const before = await snapshot();
    const first = await call("GET", "/v1/queues/q/keys?limit=2");
    expect(first).toMatchObject({ status: 200 });
    expect(first.body).toEqual({
      keys: [
        { key: "a", waiting: 2, leased: 1, heldBack: "key_full" },
        { key: "b", waiting: 1, leased: 0, heldBack: null },
      ],
      nextCursor: "b",
    });
    const second = await call("GET", `/v1/queues/q/keys?limit=2&cursor=${first.body.nextCursor}`);
    expect(second).toEqual(expect.objectContaining({ status: 200, body: { keys: [{ key: "c", waiting: 2, leased: 0, heldBack: null }], nextCursor: null } }));
    expect((await call("GET", "/v1/queues/other/keys")).body).toEqual({ keys: [{ key: "a", waiting: 5, leased: 0, heldBack: null }], nextCursor: null });
    expect((await call("GET", "/v1/queues/none/keys")).body).toEqual({ keys: [], nextCursor: null });
    expect(await snapshot()).toEqual(before);
  });

  test("a bad limit or cursor is 400 invalid_request naming it", async () => {
    const { call } = await withKeys();
    const refusals: [string, string][] = [
      ["limit=0", "limit must be at least 1"],
      ["limit=1001", "limit must be at most 1000"],
      ["limit=two", "limit must be a whole number"],
      ["cursor=", 'cursor must be a non-empty string of printable text, got ""'],
      [`cursor=${"x".repeat(256)}`, "cursor must be at most 255 bytes of UTF-8, got 256"],
      ["cursor=a%0Ab", 'cursor must be a non-empty string of printable text, got "a\\nb"'],
      ["after=a", 'unknown query parameter "after"; the parameters are limit, cursor'],
    ];
    for (const [query, message] of refusals) {
      const answer = await call("GET", `/v1/queues/q/keys?${query}`);
      expect(answer, query).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
      expect(answer.body.error.message, query).toContain(message);
    }
  });
});

describe("top keys in /v1/stats and /metrics", () => {
  test("each queue's stats name its keys by waiting jobs, and /metrics has a gauge of each; a queue without keys has none", async () => {
    const { call, store } = await withKeys();
    await store.enqueue("plain-1", { queue: "plain", now: T });
    const stats = (await call("GET", "/v1/stats")).body.queues;
    expect(stats.map(({ queue, topKeys }: { queue: string; topKeys: unknown }) => ({ queue, topKeys }))).toEqual([
      { queue: "other", topKeys: [{ key: "a", waiting: 5 }] },
      { queue: "plain", topKeys: [] },
      { queue: "q", topKeys: [{ key: "a", waiting: 2 }, { key: "c", waiting: 2 }, { key: "b", waiting: 1 }] },
    ]);
    const metrics: string = (await call("GET", "/metrics")).body;
    expect(metrics).toContain("# TYPE fencelease_key_waiting gauge");
    expect(metrics.split("\n").filter((line) => line.startsWith("fencelease_key_waiting{"))).toEqual([
      'fencelease_key_waiting{queue="other",key="a"} 5',
      'fencelease_key_waiting{queue="q",key="a"} 2',
      'fencelease_key_waiting{queue="q",key="c"} 2',
      'fencelease_key_waiting{queue="q",key="b"} 1',
    ]);
  });

  test("a key's label is escaped as the exposition format asks", async () => {
    const { call, store } = await freshApp();
    await store.enqueue("j", { queue: "q", key: 'say "hi" \\ there', now: T });
    expect((await call("GET", "/metrics")).body).toContain('fencelease_key_waiting{queue="q",key="say \\"hi\\" \\\\ there"} 1');
  });
});
