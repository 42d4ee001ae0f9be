import { env } from "cloudflare:test";
import { expect, test } from "vitest";
import { CRON_MAX_CHUNKS } from "../../src/store/maintenance.ts";
import { HOUSEKEEPING_CHUNK } from "../../src/store/store.ts";
import worker from "../../src/worker.ts";

const DAY = 24 * 60 * 60 * 1000;
const T = Date.UTC(2026, 0, 1);

test("the cron purges a backlog larger than one run allows in bounded chunks, and the rest on the next runs", async () => {
  const backlog = CRON_MAX_CHUNKS * HOUSEKEEPING_CHUNK + 7;
  await env.DB.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 - 1)
     INSERT INTO jobs (id, queue, owner, fence, done, result, attempts, created_at, updated_at)
     SELECT 'old-' || i, 'q', 'A', 1, 1, '1', 1, ?2, ?2 + i FROM n`,
  ).bind(backlog, T - 9 * DAY).run();
  await env.DB.prepare("INSERT INTO jobs (id, queue, created_at, updated_at) VALUES ('open', 'q', ?1, ?1)").bind(T).run();
  // Jobs inserted with plain SQL are counted as migrations/0015 counts them; the verbs count their own.
  await env.DB.prepare(
    "INSERT INTO queue_counts (queue, open, done, dead, cancelled) SELECT queue, sum(done = 0), sum(done = 1 AND dead = 0 AND cancelled = 0), sum(dead), sum(cancelled) FROM jobs GROUP BY queue",
  ).run();
  const left = async () => (await env.DB.prepare("SELECT count(*) AS jobs, (SELECT count(*) FROM events) AS events FROM jobs").first()) as { jobs: number; events: number };
  expect(await left()).toEqual({ jobs: backlog + 1, events: backlog + 1 });

  const cron = (time: number) => worker.scheduled({ scheduledTime: time, cron: "* * * * *", noRetry() {} } as never, env as never);
  await cron(T);
  expect(await left()).toEqual({ jobs: 8, events: 8 }); // the 7 finished last are left for the next run
  expect(await env.DB.prepare("SELECT count(*) AS n FROM jobs WHERE id LIKE 'old-%' AND updated_at < ?").bind(T - 9 * DAY + backlog - 7).first()).toEqual({ n: 0 });
  await cron(T + 60_000);
  expect(await left()).toEqual({ jobs: 1, events: 1 });
  expect(await env.DB.prepare("SELECT * FROM queue_counts").all()).toMatchObject({ results: [{ queue: "q", open: 1, done: 0, dead: 0, cancelled: 0 }] });
});
