import type { Row } from "../drivers/driver.ts";
import { InvalidArgument } from "./errors.ts";
import * as check from "./validate.ts";

// What the store says of a queue's keys (docs/queues.md#keys): a page of its
// keys with their counts (`store.queues.keys`), and each queue's top keys in
// the stats. The reads are in src/store/sql/key-reads.ts.

/** Why a key holds jobs back now: its maxLeasedPerKey current leases, its order (the job let in is held or waits for its time), or no whole token in its bucket. */
export type KeyHeldBack = "key_full" | "key_ordered" | "key_rate_limited";

/**
 * A key of a queue with open jobs: `waiting`, its jobs open and not
 * currently leased (queued or scheduled, let in or held back; a key with more
 * than 100,000 open jobs counts 100,000), `leased`, its current leases, and
 * `heldBack`, why it holds jobs back now (null: it does not).
 */
export type KeyStats = { key: string; waiting: number; leased: number; heldBack: KeyHeldBack | null };

/** What `queues.keys` takes (GET /v1/queues/{queue}/keys): the last key of the page before (`cursor`), and how many keys, 1 to MAX_KEYS_PAGE (default 100). */
export type KeysRequest = { cursor?: string | null | undefined; limit?: number | undefined; now?: number | undefined };

/** A page of a queue's keys, in key order; `next` is the cursor of the next page (null: none). */
export type KeysPage = { keys: KeyStats[]; next: string | null };

/** A key among a queue's top keys in the stats, by waiting jobs. */
export type TopKey = { key: string; waiting: number };

/** The most keys a page may take. */
export const MAX_KEYS_PAGE = 1000;

/** A page's limit, checked: 1 to MAX_KEYS_PAGE, default 100. */
export function keysLimit(value: unknown): number {
  const limit = value === undefined ? 100 : check.positiveInt("limit", value);
  if (limit > MAX_KEYS_PAGE) throw new InvalidArgument(`limit must be at most ${MAX_KEYS_PAGE}, got ${limit}`);
  return limit;
}

/** A row of `keysOf` as a key's stats. */
export function keyFromRow(row: Row): KeyStats {
  return { key: row.key as string, waiting: row.waiting as number, leased: row.leased as number, heldBack: (row.held_back as KeyHeldBack | null) ?? null };
}

/** The top keys of a queue's stats row (`topKeysOf` in src/store/sql/key-reads.ts: JSON, with each key's place), in their order. */
export function topKeysOfRow(json: unknown): TopKey[] {
  const top = JSON.parse(json as string) as (TopKey & { place: number })[];
  return top.sort((a, b) => a.place - b.place).map(({ key, waiting }) => ({ key, waiting }));
}
