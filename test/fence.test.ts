import { createClient } from "@libsql/client";
import { expect, test } from "vitest";
import { freshStore } from "./fresh-db.ts";

const T = 1_000_000;
const TTL = 30_000;

test("a deleted and re-enqueued id starts above every fence it ever had", async () => {
  const { store, url } = await freshStore();
  await store.enqueue("job-1", { now: T });
  await store.claim("job-1", "A", T, TTL);
  await store.claim("job-1", "B", T + TTL, TTL); // fence 2
  const sql = createClient({ url });
  try {
    await sql.execute("DELETE FROM jobs WHERE id = 'job-1'");
    expect(await store.enqueue("job-1", { now: T + 2 * TTL })).toBe(true);
    expect(await store.state("job-1")).toMatchObject({ fence: 2, owner: null, done: false });
    expect(await store.complete("job-1", "B", 2, T + 2 * TTL, "stale")).toBe(false);
    expect(await store.claim("job-1", "C", T + 2 * TTL, TTL)).toBe(3);

    await sql.execute("DELETE FROM jobs WHERE id = 'job-1'");
    await store.enqueue("job-1", { now: T + 3 * TTL });
    expect(await store.claim("job-1", "D", T + 3 * TTL, TTL)).toBe(4);
  } finally {
    sql.close();
  }
});

test("the database itself refuses to lower a fence, whoever writes", async () => {
  const { store, url, snapshot } = await freshStore();
  await store.enqueue("job-1", { now: T });
  await store.claim("job-1", "A", T, TTL);
  const before = await snapshot();
  const sql = createClient({ url });
  try {
    await expect(sql.execute("UPDATE jobs SET fence = 0 WHERE id = 'job-1'")).rejects.toThrow(/a fence may only grow/);
  } finally {
    sql.close();
  }
  expect(await snapshot()).toEqual(before);
});
