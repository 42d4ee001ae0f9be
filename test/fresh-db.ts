import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { onTestFinished } from "vitest";
import { type LeaseStore, openStore } from "../src/index.ts";

/** A new temp dir, removed when the test ends. */
export function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "fencelease-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A URL for a new database file in its own temp dir, removed when the test ends. */
export function freshUrl(): string {
  return `file:${join(freshDir(), "fencelease.db")}`;
}

/** Everything in the jobs table, read over a connection of its own. */
export type Snapshot = Record<string, Record<string, unknown>>;

/**
 * A store on a fresh file database, and a second connection that reads what is
 * really stored, so that assertions never see a cache of the store's.
 */
export async function freshStore(): Promise<{ store: LeaseStore; url: string; snapshot: () => Promise<Snapshot> }> {
  const url = freshUrl();
  const store = await openStore({ url });
  const reader = createClient({ url });
  onTestFinished(() => {
    reader.close();
    store.close();
  });
  async function snapshot(): Promise<Snapshot> {
    const rows = (await reader.execute("SELECT * FROM jobs ORDER BY id")).rows;
    return Object.fromEntries(rows.map((row) => [row.id as string, { ...row }]));
  }
  return { store, url, snapshot };
}
