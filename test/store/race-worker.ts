// One racer of test/store/races.test.ts and key-races.test.ts: an OS process of its own, with its own
// connection to the database. The test drives every racer in lock step over
// stdin, one command per line, so that all of them hit the database together;
// each answers one JSON line per command, and stops when stdin closes.
//   node test/store/race-worker.ts URL OWNER NOW TTL
//   stdin: "claim ID"          -> the fence won, or null
//   stdin: "claim-next QUEUE N [AT]" -> [[id, fence], ...] of the jobs taken (at AT, default NOW;
//                                       "real": the real clock, read when the command comes)
//   stdin: "complete ID FENCE"  -> true if the completion was accepted
//   stdin: "enqueue-once QUEUE KEY N" -> the ids of its N enqueues (OWNER-0 ...) of dedup key KEY (a window of a minute) that created a job
import { createInterface } from "node:readline";
import { openStore } from "../../src/node.ts";
import { noteVerbs } from "../../src/store/note.ts";

const [url, owner, now, ttl] = process.argv.slice(2) as [string, string, string, string];
const store = await openStore({ url, migrations: false });
process.stdout.write("ready\n");

for await (const line of createInterface({ input: process.stdin })) {
  const [command, target, limit, at = now] = line.split(" ") as [string, string, string, string?];
  if (command === "claim") {
    const fence = await noteVerbs(store).claim(target, owner, Number(now), Number(ttl));
    process.stdout.write(`${JSON.stringify(fence)}\n`);
  } else if (command === "complete") {
    const done = await noteVerbs(store).complete(target, owner, Number(limit), Number(now), "ok");
    process.stdout.write(`${JSON.stringify(done)}\n`);
  } else if (command === "enqueue-once") {
    const [, queue, key, n] = line.split(" ") as [string, string, string, string];
    const answers = await Promise.all(Array.from({ length: Number(n) }, (_, i) => store.enqueue(`${owner}-${i}`, { queue, dedupKey: key, dedupTtlMs: 60_000, now: Number(now) })));
    process.stdout.write(`${JSON.stringify(answers.flatMap((answer) => (answer.created ? [answer.job.id] : [])))}\n`);
  } else {
    const leases = await store.claimNext(target, { owner, ttlMs: Number(ttl), limit: Number(limit), now: at === "real" ? Date.now() : Number(at) });
    process.stdout.write(`${JSON.stringify(leases.map((lease) => [lease.job.id, lease.fence]))}\n`);
  }
}
store.close();
