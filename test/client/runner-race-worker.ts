// One racer of test/client/runner-race.test.ts: an OS process of its own that
// runs runWorker in-process, over its own store (its own connection) on the
// shared file. It says "ready" once its store is open, starts on "go", drains
// the queue (stop({ drain: true })), and prints one JSON line: the jobs its
// handler ran and the errors its runner reported.
//   node test/client/runner-race-worker.ts URL OWNER CONCURRENCY
import { createInterface } from "node:readline";
import { LeaseClient, runWorker } from "../../src/client/index.ts";
import { openStore } from "../../src/node.ts";

const [url, owner, concurrency] = process.argv.slice(2) as [string, string, string];
const store = await openStore({ url, migrations: false });
const client = new LeaseClient({ store });
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
process.stdout.write("ready\n");
await lines.next(); // "go"
const ran: string[] = [];
const errors: string[] = [];
const worker = runWorker(client, { queue: "race", owner, concurrency: Number(concurrency), ttlMs: 30_000, onError: (error) => errors.push(String(error)) }, async ({ job }) => {
  ran.push(job.id);
  if (ran.length % 7 === 0) await new Promise((resolve) => setTimeout(resolve, 1)); // now and then a handler that takes a moment
  return { by: owner };
});
await worker.stop({ drain: true });
process.stdout.write(`${JSON.stringify({ ran, errors })}\n`);
store.close();
process.exit(0);
