// A long-running Node consumer: takes the jobs of one queue one at a time,
// holds each lease with heartbeats while it works, and stops gracefully on
// SIGINT or SIGTERM (it finishes the job in hand, takes no new one, and exits).
//
//   FENCELEASE_URL=http://127.0.0.1:8787 QUEUE=thumbnails node examples/node-worker.ts
import { type HeldLease, LeaseClient, withLease } from "fencelease/client";

const client = new LeaseClient({ baseUrl: process.env.FENCELEASE_URL ?? "http://127.0.0.1:8787", token: process.env.FENCELEASE_TOKEN });
const queue = process.env.QUEUE ?? "default";
const owner = `node-worker-${process.pid}`;
const idleMs = Number(process.env.IDLE_MS ?? 1_000); // how long to wait when the queue is empty

const stopping = new AbortController();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.log(`${signal}: finishing the job in hand, then stopping`);
    stopping.abort();
  });
}

/** The work itself. The fence goes with every write to another system, so a stale write can be refused there too. */
async function handle({ job, fence, signal }: HeldLease): Promise<unknown> {
  const words = String((job.payload as { text?: string } | null)?.text ?? "").split(/\s+/).filter(Boolean);
  if (signal.aborted) throw signal.reason; // the lease is gone: stop before writing anything
  console.log(`processed ${job.id} with fence ${fence}`);
  return { words: words.length };
}

/** Waits, unless told to stop first. */
function idle(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    stopping.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });
}

console.log(`${owner} taking jobs from queue ${queue}`);
while (!stopping.signal.aborted) {
  try {
    const done = await withLease(client, { queue }, handle, { owner, ttlMs: 30_000 });
    if (done === null) await idle(idleMs);
  } catch (error) {
    console.error(`${owner}: ${(error as Error).message}`);
    await idle(idleMs);
  }
}
console.log(`${owner} stopped`);
