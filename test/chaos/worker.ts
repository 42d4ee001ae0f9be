// One chaos worker: an OS process of its own that loops claim-next → work →
// complete against the server over HTTP, and records every request and answer
// in its own history file before and after it happens. Some leases it abandons
// on purpose: it stalls past the lease and comes back as a zombie that tries
// to renew and complete; some it releases. It stops on SIGTERM after the step
// it is in, and at once if the orchestrator goes away (the IPC channel closes).
//   node test/chaos/worker.ts   (settings in the environment: see `settings`)
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
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

/** Sends one request and records it; status 0 when no answer came. */
async function call(op: Verb, path: string, body: Record<string, unknown>, id?: string): Promise<{ status: number; body?: any }> {
  const n = seq++;
  record({ k: "send", w: settings.name, n, t: Date.now(), op, ...(id !== undefined && { id }), body });
  try {
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${settings.token}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(20_000),
    });
    const answer = await response.json();
    record({ k: "recv", w: settings.name, n, t: Date.now(), status: response.status, body: answer });
    return { status: response.status, body: answer };
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
