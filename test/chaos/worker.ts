// One chaos worker: an OS process of its own that loops claim-next → work →
// complete against the server over HTTP, or in-process through LeaseClient
// over a store of its own on the run's database file (CHAOS_DB_URL), and
// records every call and answer in its own history file before and after it
// happens (in-process, an answer as the route would answer it, and a refusal
// as its status and error body). Some leases it abandons
// on purpose: it stalls past the lease and comes back as a zombie that tries
// to renew and complete; some it releases. It stops on SIGTERM after the step
// it is in, and at once if the orchestrator goes away (the IPC channel closes).
//   node test/chaos/worker.ts   (settings in the environment: see `settings`)
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { FenceleaseError, LeaseClient } from "../../src/client/index.ts";
import { openStore } from "../../src/node.ts";
import type { HistoryLine, Verb } from "./history.ts";
import { seededRandom, sleep } from "./random.ts";

const env = process.env;
const settings = {
  dir: env.CHAOS_DIR!, // holds server-url and history/
  name: env.CHAOS_WORKER!, // also the owner of its leases: unique per process
  token: env.CHAOS_TOKEN!,
  queue: env.CHAOS_QUEUE ?? "chaos",
  ttlMs: Number(env.CHAOS_TTL_MS),
  workMs: Number(env.CHAOS_WORK_MS ?? 5),
  stallRate: Number(env.CHAOS_STALL_RATE ?? 0.02),
  releaseRate: Number(env.CHAOS_RELEASE_RATE ?? 0.02),
  renewRate: Number(env.CHAOS_RENEW_RATE ?? 0.1),
  seed: Number(env.CHAOS_SEED ?? 1),
  firstStall: env.CHAOS_FIRST_STALL === "1", // abandon the first lease, whatever the dice say
  dbUrl: env.CHAOS_DB_URL, // set: in-process, over a store of this process on that file
};
const random = seededRandom(settings.seed);
const historyFile = join(settings.dir, "history", `${settings.name}.jsonl`);
const serverUrl = () => readFileSync(join(settings.dir, "server-url"), "utf8").trim();

let url = serverUrl();
let seq = 0;
let stopping = false;
process.on("SIGTERM", () => (stopping = true));
process.on("disconnect", () => process.exit(0));

function record(line: HistoryLine): void {
  appendFileSync(historyFile, `${JSON.stringify(line)}\n`);
}

/** What a call answered: its status and JSON body; status 0 when no answer came. */
type Answered = { status: number; body?: any };

/** Sends one request to the server and answers its status and JSON; throws when no answer came. */
async function overHttp(path: string, body: Record<string, unknown>): Promise<Answered> {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${settings.token}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  return { status: response.status, body: await response.json() };
}

/** The in-process client, over this process's own store on the run's file; made once, if this worker is in-process. */
const local = settings.dbUrl === undefined ? undefined : new LeaseClient({ store: await openStore({ url: settings.dbUrl, migrations: false }), retry: { retries: 0 } });

/** Makes one call in-process and answers what its route would: 200 and the answer, or a refusal's status and error body. */
async function inProcess(client: LeaseClient, op: Verb, body: any, id?: string): Promise<Answered> {
  try {
    if (op === "claim-next") return { status: 200, body: await client.claimNextAnswer(settings.queue, body) };
    if (op === "renew") return { status: 200, body: { until: await client.renew(id!, body) } };
    if (op === "release") return { status: 200, body: { job: await client.release(id!, body) } };
    return { status: 200, body: await client.complete(id!, body) };
  } catch (error) {
    if (!(error instanceof FenceleaseError)) throw error;
    return { status: error.status, body: { error: { code: error.code, message: error.message, details: error.details } } };
  }
}

/** Sends one request and records it; status 0 when no answer came. */
async function call(op: Verb, path: string, body: Record<string, unknown>, id?: string): Promise<Answered> {
  const n = seq++;
  record({ k: "send", w: settings.name, n, t: Date.now(), op, ...(id !== undefined && { id }), body });
  try {
    const answer = local ? await inProcess(local, op, body, id) : await overHttp(path, body);
    record({ k: "recv", w: settings.name, n, t: Date.now(), status: answer.status, body: answer.body });
    return answer;
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    record({ k: "fail", w: settings.name, n, t: Date.now(), error: cause?.code ?? cause?.message ?? String(error) });
    url = serverUrl(); // the server may have come back on another port
    return { status: 0 };
  }
}

const owner = settings.name;
const { ttlMs } = settings;
const jobPath = (id: string, verb: string) => `/v1/jobs/${encodeURIComponent(id)}/${verb}`;

/** Completes, sending the same completion again while no answer comes: a repeat is answered 200 too. */
async function complete(id: string, fence: number): Promise<void> {
  for (let attempt = 0; attempt < 6; attempt++) {
    const { status } = await call("complete", jobPath(id, "complete"), { owner, fence, result: { owner, fence, id } }, id);
    if (status !== 0 && status !== 503) return;
    await sleep(50 * 2 ** attempt);
  }
}

for (let idle = 0; !stopping; ) {
  const claimed = await call("claim-next", `/v1/queues/${settings.queue}/claim`, { owner, ttlMs, limit: 1 });
  if (claimed.status !== 200) {
    await sleep(30 + random() * 70); // the server is down or busy: back off
    continue;
  }
  const lease = claimed.body.leases[0] as { fence: number; job: { id: string } } | undefined;
  if (lease === undefined) {
    await sleep(Math.min(200, 10 * ++idle));
    continue;
  }
  idle = 0;
  const { fence, job: { id } } = lease;
  const dice = random();
  if (dice < settings.stallRate || settings.firstStall) {
    settings.firstStall = false;
    // A zombie: gone past its lease, then back as if nothing happened.
    const ms = ttlMs + 100 + Math.round(random() * ttlMs);
    record({ k: "stall", w: owner, t: Date.now(), id, fence, ms });
    await sleep(ms);
    await call("renew", jobPath(id, "renew"), { owner, fence, ttlMs }, id);
    await complete(id, fence);
  } else if (dice < settings.stallRate + settings.releaseRate) {
    await call("release", jobPath(id, "release"), { owner, fence }, id);
  } else {
    await sleep(random() * settings.workMs);
    if (dice < settings.stallRate + settings.releaseRate + settings.renewRate) {
      await call("renew", jobPath(id, "renew"), { owner, fence, ttlMs }, id);
      await sleep(random() * settings.workMs);
    }
    await complete(id, fence);
  }
}
process.exit(0);
