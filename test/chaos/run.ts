// The chaos run: worker processes loop claim-next → work → complete against
// the Node server on one file database (or in-process, on the same file beside
// it), while the run injects faults: workers
// that stall past their lease and come back as zombies (the workers do that
// themselves), SIGKILLs of workers (mid-request, as a rule: a worker is almost
// always waiting for an answer), and SIGKILL plus restart of the server. Then
// test/chaos/check.ts reads the history and the database it left.
//
// Every wait is bounded, everything listens on 127.0.0.1, and every process
// the run starts is killed in `finally`, and exits by itself if the run dies
// (their IPC channel closes).
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { appendFileSync, closeSync, fstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@libsql/client";
import { openStore } from "../../src/runtime/node/open.ts";
import { type Counts, checkRun, type JobRow } from "./check.ts";
import { type ChaosEvent, type HistoryLine, parseLines } from "./history.ts";
import { seededRandom, sleep } from "./random.ts";

export type ChaosOptions = {
  /** Worker processes running at any time; default 8. */
  workers: number;
  /** How many of them work in-process, each over a store of its own on the database file, beside the server; default 0 (all over HTTP). */
  inProcessWorkers?: number;
  /** Jobs enqueued before the workers start; default 2,000. */
  jobs: number;
  /** The lease every claim asks for; default 500 ms. */
  ttlMs: number;
  /** Workers SIGKILLed (and replaced) during the run, spread over its progress; default 6. */
  workerKills: number;
  /** Server SIGKILLs, each followed by a restart on the same database; default 2. */
  serverRestarts: number;
  /** The share of leases a worker abandons past their ttl, then renews and completes as a zombie; default 0.02. */
  stallRate: number;
  /** The share of leases released instead of completed; default 0.02. */
  releaseRate: number;
  /** The share of leases renewed once before completing; default 0.1. */
  renewRate: number;
  /** The longest a piece of work takes, in ms; default 5. */
  workMs: number;
  /** Seeds every random choice of the run and of its workers; default random, and printed. */
  seed: number;
  /** The run stops injecting and ends by then, done or not; default 180 s. */
  deadlineMs: number;
  /** Serve with group commit (the default, as `npm start` does), or false to turn it off. */
  groupCommit?: boolean;
  /** Where the database and the history go; default a new temp dir, removed after a run that passed. */
  dir?: string;
  /** Keep the dir even after a run that passed. */
  keep?: boolean;
  /** Progress lines; none by default. */
  log?: (line: string) => void;
};

export const DEFAULT_CHAOS: ChaosOptions = {
  workers: 8,
  jobs: 2000,
  ttlMs: 500,
  workerKills: 6,
  serverRestarts: 2,
  stallRate: 0.02,
  releaseRate: 0.02,
  renewRate: 0.1,
  workMs: 5,
  seed: 1,
  deadlineMs: 180_000,
};

export type ChaosReport = { dir: string; seed: number; wallMs: number; counts: Counts; violations: string[] };

const HERE = fileURLToPath(new URL(".", import.meta.url));
const QUEUE = "chaos";

/** Runs one chaos run and checks it; the report lists every violation (none: the run passed). */
export async function runChaos(given: Partial<ChaosOptions> = {}): Promise<ChaosReport> {
  const options = { ...DEFAULT_CHAOS, ...given };
  const log = options.log ?? (() => {});
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "fencelease-chaos-"));
  mkdirSync(join(dir, "history"), { recursive: true });
  const url = `file:${join(dir, "chaos.db")}`;
  const token = randomUUID();
  const random = seededRandom(options.seed);
  const started = Date.now();
  const events: ChaosEvent[] = [];
  const event = (happened: ChaosEvent) => {
    events.push(happened);
    appendFileSync(join(dir, "events.jsonl"), `${JSON.stringify(happened)}\n`);
  };
  const children = new Set<ChildProcess>();
  const enqueued = Array.from({ length: options.jobs }, (_, i) => `job-${String(i).padStart(7, "0")}`);

  // The jobs, through the store, before anyone works on them.
  const store = await openStore({ url });
  try {
    for (const id of enqueued) await store.enqueue(id, { queue: QUEUE, payload: { id }, now: started });
  } finally {
    store.close();
  }
  writeFileSync(join(dir, "enqueued.json"), JSON.stringify(enqueued));

  /** Starts the server process on `port` (0: any) and answers it with its URL, or throws. */
  async function startServerProcess(port: number): Promise<{ child: ChildProcess; url: string }> {
    const child = spawn(process.execPath, [join(HERE, "server.ts")], {
      env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), DATABASE_URL: url, FENCELEASE_TOKENS: token, FENCELEASE_AUTH: "", GROUP_COMMIT: options.groupCommit === false ? "0" : "1" },
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    children.add(child);
    child.on("exit", () => children.delete(child));
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr += chunk));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server did not start within 15 s: ${stderr}`)), 15_000);
      child.once("message", (message: { url: string }) => {
        clearTimeout(timer);
        resolve({ child, url: message.url });
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`the server exited with ${code} before it listened: ${stderr}`));
      });
    });
  }

  function publish(serverUrl: string): void {
    writeFileSync(join(dir, "server-url.next"), serverUrl);
    renameSync(join(dir, "server-url.next"), join(dir, "server-url")); // a worker never reads half a URL
  }

  async function killAndWait(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill(signal);
    const timer = sleep(graceMs).then(() => "timeout");
    if ((await Promise.race([exited, timer])) === "timeout") {
      child.kill("SIGKILL");
      await exited;
    }
  }

  let stopping = false;
  const workers: { name: string; child: ChildProcess; killed: boolean }[] = [];
  function spawnWorker(slot: number, generation: number): void {
    const name = `w${slot}.${generation}`;
    const child = spawn(process.execPath, [join(HERE, "worker.ts")], {
      env: {
        ...process.env,
        CHAOS_DIR: dir, CHAOS_WORKER: name, CHAOS_TOKEN: token, CHAOS_QUEUE: QUEUE,
        CHAOS_TTL_MS: String(options.ttlMs), CHAOS_WORK_MS: String(options.workMs),
        CHAOS_STALL_RATE: String(options.stallRate), CHAOS_RELEASE_RATE: String(options.releaseRate),
        CHAOS_RENEW_RATE: String(options.renewRate), CHAOS_SEED: String(options.seed * 7919 + slot * 131 + generation),
        // The very first worker abandons its first lease, so that every run, however small, has a zombie.
        CHAOS_FIRST_STALL: slot === 0 && generation === 0 ? "1" : "0",
        ...(slot < (options.inProcessWorkers ?? 0) && { CHAOS_DB_URL: url }),
      },
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    const worker = { name, child, killed: false };
    workers[slot] = worker;
    children.add(child);
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr += chunk));
    child.on("exit", (code, signal) => {
      children.delete(child);
      if (!worker.killed && !(stopping && (code === 0 || signal === "SIGTERM"))) {
        event({ k: "crash", w: name, t: Date.now(), code, stderr: stderr.slice(0, 2000) || `signal ${signal}` });
      }
    });
  }

  /** A worker that has sent a request and not had its answer yet, looking from `first` on; else `first`. */
  async function waitingWorker(first: number): Promise<number> {
    for (let attempt = 0; attempt < 200; attempt++) {
      for (let i = 0; i < options.workers; i++) {
        const slot = (first + i) % options.workers;
        if (lastLineOf(join(dir, "history", `${workers[slot]!.name}.jsonl`)).startsWith('{"k":"send"')) return slot;
      }
      await sleep(1);
    }
    return first;
  }

  const reader = createClient({ url });
  let server: { child: ChildProcess; url: string } | undefined;
  try {
    server = await startServerProcess(0);
    const port = Number(new URL(server.url).port);
    publish(server.url);
    log(`chaos: ${options.workers} workers (${options.inProcessWorkers ?? 0} in-process), ${options.jobs} jobs, ttl ${options.ttlMs} ms, seed ${options.seed}, server ${server.url}${options.groupCommit === false ? " (without group commit)" : ""}, dir ${dir}`);
    const generations = Array.from({ length: options.workers }, () => 0);
    for (let slot = 0; slot < options.workers; slot++) spawnWorker(slot, 0);

    // Faults at evenly spread points of the progress, so that each lands mid-run.
    const at = (count: number, i: number) => 0.1 + (0.75 * (i + 1)) / (count + 1);
    let kills = 0;
    let restarts = 0;
    let done = 0;
    const deadline = started + options.deadlineMs;
    for (let lastLog = Date.now(); ; ) {
      await sleep(50);
      try {
        done = Number((await reader.execute("SELECT count(*) AS n FROM jobs WHERE done = 1")).rows[0]!.n);
      } catch {
        // the server was killed in the middle of a write; the next read sees the file recovered
      }
      const finished = done >= options.jobs;
      const progress = done / options.jobs;
      if (Date.now() > deadline) break;
      if (kills < options.workerKills && (finished || progress >= at(options.workerKills, kills))) {
        const slot = await waitingWorker(Math.floor(random() * options.workers));
        const victim = workers[slot]!;
        victim.killed = true;
        await killAndWait(victim.child, "SIGKILL", 5_000);
        event({ k: "kill", w: victim.name, t: Date.now() });
        kills++;
        spawnWorker(slot, ++generations[slot]!);
        continue;
      }
      if (restarts < options.serverRestarts && (finished || progress >= at(options.serverRestarts, restarts))) {
        await killAndWait(server.child, "SIGKILL", 5_000);
        await sleep(random() * 200); // the workers meet a refused connection meanwhile
        for (let attempt = 0; ; attempt++) {
          try {
            server = await startServerProcess(attempt < 3 ? port : 0); // the same port, unless someone took it
            break;
          } catch (error) {
            if (attempt >= 5) throw error;
            await sleep(200);
          }
        }
        publish(server.url);
        event({ k: "restart", t: Date.now(), url: server.url });
        restarts++;
        continue;
      }
      if (finished) break;
      if (Date.now() - lastLog > 2000) {
        lastLog = Date.now();
        log(`chaos: ${done}/${options.jobs} done after ${((Date.now() - started) / 1000).toFixed(1)} s`);
      }
    }

    // Stop: the workers after the step they are in, then the server, gracefully.
    stopping = true;
    await Promise.all(workers.map((worker) => killAndWait(worker.child, "SIGTERM", options.ttlMs * 3 + 5_000)));
    await killAndWait(server.child, "SIGTERM", 5_000);
    if (done < options.jobs) await sleep(options.ttlMs * 2 + 100); // leases of stopped workers run out before the check

    const rows = (await reader.execute("SELECT id, owner, until, fence, result, done, attempts FROM jobs")).rows as unknown as JobRow[];
    const integrity = (await reader.execute("PRAGMA integrity_check")).rows.map((row) => String(row[0]));
    const lines = readdirSync(join(dir, "history")).flatMap((file) => parseLines<HistoryLine>(readFileSync(join(dir, "history", file), "utf8")));
    const { violations, counts } = checkRun({ lines, events, enqueued, rows: rows.map((row) => ({ ...row })), integrity, now: Date.now() });
    if (counts.done < counts.jobs) violations.push(`${counts.jobs - counts.done} jobs were not done by the deadline (claimable: ${counts.unfinished})`);
    if (kills < options.workerKills || restarts < options.serverRestarts) violations.push(`only ${kills} kills and ${restarts} restarts were injected`);
    const report = { dir, seed: options.seed, wallMs: Date.now() - started, counts, violations };
    if (violations.length === 0 && !options.keep && options.dir === undefined) rmSync(dir, { recursive: true, force: true });
    return report;
  } finally {
    reader.close();
    for (const child of children) child.kill("SIGKILL");
  }
}

/** The last line of a file, read from its end; "" if there is none yet. */
function lastLineOf(file: string): string {
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    const size = fstatSync(fd).size;
    const tail = Buffer.alloc(Math.min(size, 4096));
    readSync(fd, tail, 0, tail.length, size - tail.length);
    const lines = tail.toString("utf8").trimEnd().split("\n");
    return lines[lines.length - 1] ?? "";
  } catch {
    return "";
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The report as lines for a person: the counts, then each violation. */
export function describeReport(report: ChaosReport): string[] {
  const c = report.counts;
  return [
    `chaos ${report.violations.length === 0 ? "passed" : "FAILED"} in ${(report.wallMs / 1000).toFixed(1)} s (seed ${report.seed})`,
    `  jobs ${c.jobs} (done ${c.done}), claims ${c.claims}, completions ${c.completions}, requests ${c.requests} (unanswered ${c.unanswered}, 503 ${c.unavailable})`,
    `  refused stale writes ${c.refusedStaleWrites}, zombies ${c.zombies} (their writes refused: ${c.zombieWritesRefused})`,
    `  worker kills ${c.kills} (mid-request ${c.killsMidRequest}), server kills + restarts ${c.restarts}`,
    ...report.violations.map((violation) => `  VIOLATION: ${violation}`),
    ...(report.violations.length > 0 ? [`  history and database kept in ${report.dir}`] : []),
  ];
}
