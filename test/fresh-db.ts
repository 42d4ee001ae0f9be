import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { onTestFinished } from "vitest";
import { type LeaseStore } from "../src/index.ts";
import { openStore } from "../src/node.ts";
import type { FreshStorage } from "./contract/storage.contract.ts";

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

/** How a test opens a store on a database file: by its URL (the native file driver) unless told otherwise. */
export type OpenOn = (url: string, options?: { migrations?: false; random?: () => number }) => Promise<LeaseStore>;

/**
 * A store on a fresh file database (or on `url`, a file made for this test),
 * and a second connection that reads what is really stored, so that
 * assertions never see a cache of the store's.
 */
export async function freshStore(open: OpenOn = (url, options) => openStore({ url, ...options }), url = freshUrl()): Promise<FreshStorage & { url: string }> {
  const store = await open(url);
  const reader = createClient({ url });
  onTestFinished(() => {
    reader.close();
    store.close();
  });
  return {
    store,
    url,
    async snapshot() {
      const rows = (await reader.execute("SELECT * FROM jobs ORDER BY id")).rows;
      return Object.fromEntries(rows.map((row) => [row.id as string, { ...row }]));
    },
    async reopen(options = {}) {
      const other = await open(url, { migrations: false, ...options });
      onTestFinished(() => other.close());
      return other;
    },
    async exec(sql) {
      await reader.execute(sql);
    },
    async rows(sql, args = []) {
      return (await reader.execute({ sql, args })).rows.map((row) => ({ ...row }));
    },
  };
}
