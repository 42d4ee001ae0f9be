// A Cloudflare Worker whose cron trigger pulls due jobs from a fencelease API
// and writes each result to its own D1 database, fenced: the downstream write
// carries the lease's fence, and a write from an older lease is refused there.
// How to run it, locally or deployed: the header of examples/cron-worker/wrangler.toml.
import type { D1Database, ExecutionContext, Fetcher, ScheduledController } from "@cloudflare/workers-types";
import { LeaseClient, withLease } from "fencelease/client";

export type Env = {
  /** Where fencelease runs, e.g. https://fencelease.example.workers.dev. */
  FENCELEASE_URL: string;
  /** A token from fencelease's FENCELEASE_TOKENS (a secret). */
  FENCELEASE_TOKEN: string;
  /** Optional: a service binding to the fencelease Worker, which skips the public internet. */
  FENCELEASE?: Fetcher;
  /** This Worker's own database, with examples/cron-worker/schema.sql applied. */
  DB: D1Database;
  QUEUE?: string;
};

/** What an invoice job carries: its lines, each with an amount. */
type Invoice = { lines?: { amount: number }[] };

/** At most this many jobs per run, so that one run stays well inside a cron invocation's limits. */
const JOBS_PER_RUN = 25;

/**
 * Stores an invoice total unless a write with a higher or equal fence got
 * there first: the decision and the write are one statement.
 * Answers whether it was stored.
 */
export async function storeTotal(db: D1Database, jobId: string, fence: number, total: number): Promise<boolean> {
  const { meta } = await db
    .prepare(
      `INSERT INTO invoice_totals (job_id, fence, total) VALUES (?1, ?2, ?3)
       ON CONFLICT (job_id) DO UPDATE SET fence = excluded.fence, total = excluded.total
       WHERE excluded.fence > invoice_totals.fence`,
    )
    .bind(jobId, fence, total)
    .run();
  return meta.changes === 1;
}

export default {
  async scheduled(controller: ScheduledController, env: Env, _ctx: ExecutionContext): Promise<void> {
    const binding = env.FENCELEASE;
    const client = new LeaseClient({
      baseUrl: env.FENCELEASE_URL,
      token: env.FENCELEASE_TOKEN,
      fetch: binding ? (input, init) => binding.fetch(input as never, init as never) as unknown as Promise<Response> : undefined,
    });
    const owner = `cron-worker-${controller.scheduledTime}`;
    let processed = 0;
    while (processed < JOBS_PER_RUN) {
      const done = await withLease<Invoice | null>(client, { queue: env.QUEUE ?? "invoices" }, async ({ job, fence }) => {
        const lines = job.payload?.lines ?? [];
        const total = lines.reduce((sum, line) => sum + line.amount, 0);
        if (!(await storeTotal(env.DB, job.id, fence, total))) throw new Error(`a newer lease already stored ${job.id}`);
        return { total };
      }, { owner, ttlMs: 30_000 });
      if (done === null) break;
      processed++;
    }
    console.log(`cron-worker: processed ${processed} job(s)`);
  },
};
