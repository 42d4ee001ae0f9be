// Search (issue 31): a page of 50 through the store over a database of many
// jobs, for a few filters, each page looking at 20,000 jobs at most
// (src/store/search.ts). The target: under 50 ms a page.
//
// `searchPages(jobs, pages)` builds the database and adds a row per filter to
// the table of bench/measure.ts.
import { createClient } from "@libsql/client";
import { openStore } from "../src/runtime/node/open.ts";
import type { JobFilter } from "../src/store/shapes.ts";
import { freshDatabase, T } from "./db.ts";
import { label, results, timed } from "./measure.ts";

/**
 * `jobs` jobs `job-0`...: 1 in 100 dead, with the error "timeout after 30 s",
 * 1 in 1,000 of the queue "rare", each of one of 50 keys; the rest queued in
 * "bench".
 */
async function searchable(jobs: number): Promise<string> {
  const url = await freshDatabase(0);
  const client = createClient({ url });
  const dead = "i % 100 = 7";
  try {
    // One statement, as bench/db.ts fills a queue: an UPDATE afterwards would rewrite every index entry of a million rows.
    await client.execute(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${jobs - 1})
      INSERT INTO jobs (id, queue, key, run_at, created_at, updated_at, done, dead, last_error)
      SELECT 'job-' || i, CASE WHEN i % 1000 = 3 THEN 'rare' ELSE 'bench' END, 'tenant-' || (i % 50), ${T}, ${T} + i, ${T} + i,
             ${dead}, ${dead}, CASE WHEN ${dead} THEN 'timeout after 30 s' END FROM n`);
  } finally {
    client.close();
  }
  return url;
}

/**
 * searchPages measures `pages` pages of 50 for each filter, each following the
 * cursor of the one before (from the start again at the end), and adds their
 * rows: pages a second, and each page's latency.
 */
export async function searchPages(jobs: number, pages: number): Promise<void> {
  const started = performance.now();
  const url = await searchable(jobs);
  console.error(`  (${jobs.toLocaleString("en")} jobs built in ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  const store = await openStore({ url, migrations: false });
  const filters: [string, JobFilter, string][] = [
    ["no filter", {}, "every job matches: a page reads about 51 rows"],
    ["status dead", { status: "dead" }, "1 job in 100 matches: a page reads about 5,000 rows"],
    ["error text", { error: "timeout" }, "1 in 100, by instr() on lastError"],
    ["queue rare", { queue: "rare" }, "1 in 1,000: a page stops at 20,000 rows looked at, with about 20 jobs"],
    ["id prefix", { idPrefix: "job-5" }, "a range of the primary key: reads only ids that start with job-5"],
    ["no match", { error: "no such text" }, "the worst: 20,000 rows looked at, then the last id of them read again for the cursor"],
    ["dead, created in a range", { status: "dead", createdFrom: T + Math.floor(jobs / 2), createdTo: T + jobs }, "statuses and times together, from the middle on"],
  ];
  try {
    for (const [name, filter, note] of filters) {
      let cursor: string | undefined;
      const result = await timed(pages, async () => {
        const page = await store.list({ ...filter, limit: 50, cursor, now: T + 10 });
        cursor = page.next ?? undefined;
      });
      results.push({ name: `search page of 50 over ${label(jobs)} jobs: ${name}`, unit: "pages/s", ...result, note: `${note}; target under 50 ms a page` });
    }
  } finally {
    store.close();
  }
}
