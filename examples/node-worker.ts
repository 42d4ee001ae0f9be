// A long-running Node consumer: runs up to CONCURRENCY jobs of one queue at
// once with runWorker (which renews all their leases in one call, and takes the
// next jobs with each batch of results; while the queue is empty, one claim
// waits on the server for a job, so it never polls), and stops gracefully on SIGINT or
// SIGTERM: it takes no new job, finishes the ones in hand, stores their
// results, and exits.
//
// From this repository, after `npm install` and beside `npm start`:
//
//   FENCELEASE_URL=http://127.0.0.1:8787 QUEUE=thumbnails CONCURRENCY=16 node_modules/.bin/node examples/node-worker.ts
//
// Or embedded, with no server: the same worker over a store of its own on the
// database file (any number of such processes, and a server, may share it):
//
//   DATABASE_URL=file:./data/fencelease.db QUEUE=thumbnails node_modules/.bin/node examples/node-worker.ts
//
// node_modules/.bin/node is the Node 24 of the devDependency `node`: a .ts file
// runs only on a Node that strips types (22.18 and later), not on Node 20. It
// is run itself, not through `npx node`: npx would stay in between as the
// parent, and a `kill -TERM` of npx's pid would leave this worker running,
// orphaned. Copied into a project of your own, run it with such a Node, or
// compile it with tsc.
import { type HeldLease, LeaseClient, runWorker } from "fencelease/client";
import { openStore } from "fencelease/node";

// In-process over a store of this process when given a database, else over HTTP: the same client either way.
const store = process.env.DATABASE_URL ? await openStore({ url: process.env.DATABASE_URL }) : undefined;
const client = store ? new LeaseClient({ store }) : new LeaseClient({ baseUrl: process.env.FENCELEASE_URL ?? "http://127.0.0.1:8787", token: process.env.FENCELEASE_TOKEN });
const queue = process.env.QUEUE ?? "default";
const owner = `node-worker-${process.pid}`;
const concurrency = Number(process.env.CONCURRENCY ?? 8); // jobs in hand at most
const waitMs = Number(process.env.WAIT_MS ?? 30_000); // how long one claim waits on the server while the queue is empty (a long poll)

/** What this queue's jobs carry (the handler's type says it once; runWorker infers it from there). */
type Doc = { text?: string } | null;

/** The work itself. The fence goes with every write to another system, so a stale write can be refused there too. */
async function handle({ job, fence, signal }: HeldLease<Doc>): Promise<{ words: number }> {
  const words = String(job.payload?.text ?? "").split(/\s+/).filter(Boolean);
  if (signal.aborted) throw signal.reason; // the lease is gone: stop before writing anything (the result would be dropped anyway)
  console.log(`processed ${job.id} with fence ${fence}`);
  return { words: words.length };
}

console.log(`${owner} taking jobs from queue ${queue}`);
const worker = runWorker(client, { queue, owner, concurrency, ttlMs: 30_000, waitMs, onError: (error) => console.error(`${owner}: ${(error as Error).message}`) }, handle);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.log(`${signal}: finishing the job in hand, then stopping`);
    void worker.stop();
  });
}
await worker.done;
store?.close(); // after the runner: its last results are stored
console.log(`${owner} stopped`);
