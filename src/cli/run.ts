import { parseArgs } from "node:util";
import { LeaseClient } from "../client/lease-client.ts";
import type { Job, JobEvent, Lease, ListRequest, QueueStats } from "../client/types.ts";
import { printable } from "../printable.ts";
import { enqueueMany } from "./enqueue-many.ts";
import { EXIT, exitFor, UsageError } from "./exit-codes.ts";

const USAGE = `fencelease: leases with fencing tokens

Usage: fencelease <command> [arguments] [options]

Server:
  serve                          serve the API (HOST, PORT, DATABASE_URL, FENCELEASE_TOKENS or FENCELEASE_AUTH=off)
  migrate                        apply migrations/ to DATABASE_URL (default file:./data/fencelease.db)
  demo                           replay the design note's story and print its timeline
                                 (against --url if given, else a server of its own on a temporary database)
Jobs:
  enqueue <id> [--queue Q] [--payload JSON] [--priority N] [--run-at MS | --delay-ms MS] [--max-attempts N]
  enqueue-many <queue> [--file F]
                                 jobs as JSON lines ({"id":"a","payload":1} per line) from F or standard input
  get <id> [--wait [MS]]          with --wait, once the job is done or dead (or MS has passed: as it then is)
  claim <id> --owner O --ttl-ms MS
  claim-next <queue> --owner O --ttl-ms MS [--limit N] [--wait MS]
                                 with --wait, wait up to MS (at most 30000) for a job while none is due
  renew <id> --owner O --fence F --ttl-ms MS
  complete <id> --owner O --fence F --result JSON
  release <id> --owner O --fence F
  fail <id> --owner O --fence F --error TEXT [--retry-in-ms MS]
  retry <id>                     put a dead job back in its queue
  delete <id>                    delete a job that is not leased
  list [--queue Q] [--status S] [--limit N] [--cursor C]
                                 S: queued, scheduled, leased, done or dead
  events <id> [--limit N] [--cursor C]
  check-lease <id> --owner O --fence F
                                 exits 0 if that is the current lease, 4 if not
  stats                          per queue: jobs by status, oldest due, refused stale writes

Options:
  --url URL      the server (FENCELEASE_URL; default http://127.0.0.1:8787)
  --token T      a bearer token (FENCELEASE_TOKEN)
  --json         print the server's JSON answer, for scripts
  --help         this text

Exit codes: 0 ok, 2 bad input, 3 not found, 4 refused (409, or check-lease: not current), 5 unreachable,
6 unauthorized, 1 anything else.`;

const OPTIONS = {
  url: { type: "string" },
  token: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean" },
  owner: { type: "string" },
  "ttl-ms": { type: "string" },
  fence: { type: "string" },
  limit: { type: "string" },
  queue: { type: "string" },
  payload: { type: "string" },
  priority: { type: "string" },
  "run-at": { type: "string" },
  "delay-ms": { type: "string" },
  "max-attempts": { type: "string" },
  result: { type: "string" },
  error: { type: "string" },
  "retry-in-ms": { type: "string" },
  status: { type: "string" },
  cursor: { type: "string" },
  file: { type: "string" },
  wait: { type: "string" },
} as const;

type Flags = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]["type"] extends "boolean" ? boolean : string };

/** Where the CLI writes (stdout for answers, stderr for the one-line errors) and reads standard input from. */
export type Io = { out: (line: string) => void; err: (line: string) => void; env: NodeJS.ProcessEnv; stdin: () => Promise<string> };

/**
 * A command: what it sends, and how it reads back to a person; `code` is the
 * exit code when the answer itself is a no (default 0).
 */
type Command = (args: { id: string; flags: Flags; client: LeaseClient; io: Io }) => Promise<{ json: unknown; text: string; code?: number }>;

/** What a command takes as its argument where it is not a job id; null for none. */
const ARGUMENT: Record<string, string | null> = { "claim-next": "a queue", "enqueue-many": "a queue", list: null, stats: null };

function required(flags: Flags, name: "owner" | "result" | "error", what: string): string {
  const value = flags[name];
  if (value === undefined) throw new UsageError(`--${name} is required: ${what}`);
  return value;
}

function integer(flags: Flags, name: keyof Flags): number | undefined {
  const value = flags[name];
  if (value === undefined) return undefined;
  const number = Number(value);
  if (typeof value !== "string" || value.trim() === "" || !Number.isInteger(number)) throw new UsageError(`--${name} must be a whole number, got ${JSON.stringify(value)}`);
  return number;
}

function requiredInteger(flags: Flags, name: "ttl-ms" | "fence"): number {
  const value = integer(flags, name);
  if (value === undefined) throw new UsageError(`--${name} is required`);
  return value;
}

function json(flags: Flags, name: "payload" | "result"): unknown {
  const value = flags[name];
  if (value === undefined) return undefined;
  try {
    return JSON.parse(value);
  } catch {
    throw new UsageError(`--${name} must be JSON (a string needs quotes: '"text"'), got ${value}`);
  }
}

const at = (ms: number) => new Date(ms).toISOString();
const leaseLine = (lease: Lease) => `claimed ${lease.job.id}: fence ${lease.fence}, until ${at(lease.until)} (owner ${lease.job.owner})`;
const jobText = (job: Job) => Object.entries(job).map(([key, value]) => `${key.padEnd(12)}${JSON.stringify(value)}`).join("\n");
const holder = (owner: string | null, fence: number | null) => (owner === null ? `fence ${fence}` : `${owner}/${fence}`);

/** A word as a shell reads it back: quoted unless it is plain. */
const shellWord = (word: string) => (/^[\w.,:@%+=\/-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`);

/** Rows of cells as columns, each as wide as its widest cell. */
function columns(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ")).join("\n");
}

/** The line that tells how to get the next page, if there is one. */
const more = (nextCursor: string | null) => (nextCursor === null ? "" : `\nmore: --cursor ${shellWord(nextCursor)}`);

const failedLine = (job: Job) =>
  job.status === "dead"
    ? `failed ${job.id}: dead after ${job.attempts} of ${job.maxAttempts} attempts`
    : `failed ${job.id}: attempt ${job.attempts} of ${job.maxAttempts}; due again at ${at(job.runAt)}`;

function eventLine(event: JobEvent): string {
  const what =
    event.kind === "refused"
      ? `refused ${event.action}: presented ${holder(event.owner, event.fence)}, current ${holder(event.currentOwner, event.currentFence)}`
      : event.owner === null && event.fence === null
        ? event.kind
        : `${event.kind} ${holder(event.owner, event.fence)}`;
  return `${at(event.at)}  ${what}${event.error === null ? "" : `: ${printable(event.error)}`}`;
}

function statsLine(stats: QueueStats): string {
  const jobs = Object.entries(stats.jobs).map(([status, count]) => `${status} ${count}`).join(", ");
  const due = stats.oldestDueAgeMs === null ? "none due" : `oldest due ${stats.oldestDueAgeMs} ms ago`;
  return `${stats.queue}: ${jobs}; ${due}; refused ${stats.refused.lastHour} in the last hour, ${stats.refused.total} ever`;
}

const COMMANDS: Record<string, Command> = {
  async enqueue({ id, flags, client }) {
    const answer = await client.enqueue({
      id,
      queue: flags.queue,
      payload: json(flags, "payload"),
      priority: integer(flags, "priority"),
      runAt: integer(flags, "run-at"),
      delayMs: integer(flags, "delay-ms"),
      maxAttempts: integer(flags, "max-attempts"),
    });
    return { json: answer, text: answer.created ? `enqueued ${id} in queue ${answer.job.queue}` : `${id} exists already; nothing changed` };
  },
  "enqueue-many": ({ id: queue, flags, client, io }) => enqueueMany(queue, flags.file, client, io.stdin),
  async get({ id, flags, client }) {
    // --wait alone waits until the job is done or dead; --wait MS at most that long.
    const job = flags.wait === undefined ? await client.get(id) : await client.waitFor(id, { timeoutMs: flags.wait === "" ? Number.MAX_SAFE_INTEGER : integer(flags, "wait") });
    return { json: job, text: jobText(job) };
  },
  async claim({ id, flags, client }) {
    const lease = await client.claim(id, { owner: required(flags, "owner", "who takes the lease"), ttlMs: requiredInteger(flags, "ttl-ms") });
    return { json: lease, text: leaseLine(lease) };
  },
  async "claim-next"({ id: queue, flags, client }) {
    if (flags.wait === "") throw new UsageError("--wait needs the most ms to wait for a job, up to 30000");
    const waitMs = integer(flags, "wait");
    const request = { owner: required(flags, "owner", "who takes the leases"), ttlMs: requiredInteger(flags, "ttl-ms"), limit: integer(flags, "limit"), waitMs };
    const leases = await client.claimNext(queue, request);
    const none = waitMs ? `nothing came in queue ${queue} within ${waitMs} ms` : `nothing due in queue ${queue}`;
    return { json: { leases }, text: leases.length === 0 ? none : leases.map(leaseLine).join("\n") };
  },
  async renew({ id, flags, client }) {
    const request = { owner: required(flags, "owner", "the lease's owner"), fence: requiredInteger(flags, "fence"), ttlMs: requiredInteger(flags, "ttl-ms") };
    const until = await client.renew(id, request);
    return { json: { until }, text: `renewed ${id} until ${at(until)}` };
  },
  async complete({ id, flags, client }) {
    const result = json(flags, "result");
    if (result === undefined) throw new UsageError("--result is required: the job's result, as JSON");
    const { job } = await client.complete(id, { owner: required(flags, "owner", "the lease's owner"), fence: requiredInteger(flags, "fence"), result });
    return { json: { job }, text: `completed ${id} with fence ${job.fence}` };
  },
  async release({ id, flags, client }) {
    const job = await client.release(id, { owner: required(flags, "owner", "the lease's owner"), fence: requiredInteger(flags, "fence") });
    return { json: { job }, text: `released ${id}; its fence stays ${job.fence}` };
  },
  async fail({ id, flags, client }) {
    const request = {
      owner: required(flags, "owner", "the lease's owner"),
      fence: requiredInteger(flags, "fence"),
      error: required(flags, "error", "why the attempt failed"),
      retryInMs: integer(flags, "retry-in-ms"),
    };
    const { job } = await client.fail(id, request);
    return { json: { job }, text: failedLine(job) };
  },
  async retry({ id, client }) {
    const job = await client.retry(id);
    return { json: { job }, text: `retried ${id}: queued again with its attempts reset; its fence stays ${job.fence}` };
  },
  async delete({ id, client }) {
    await client.delete(id);
    return { json: { deleted: true }, text: `deleted ${id}` };
  },
  async list({ flags, client }) {
    const status = flags.status as ListRequest["status"]; // the server names the statuses it knows when it refuses one
    const page = await client.list({ queue: flags.queue, status, limit: integer(flags, "limit"), cursor: flags.cursor });
    const rows = page.jobs.map((job) => [job.id, job.status, job.queue, `fence ${job.fence}`, job.owner === null ? "" : `owner ${job.owner}`]);
    return { json: page, text: (rows.length === 0 ? "no jobs" : columns(rows).replace(/ +$/gm, "")) + more(page.nextCursor) };
  },
  async events({ id, flags, client }) {
    const page = await client.events(id, { limit: integer(flags, "limit"), cursor: flags.cursor });
    return { json: page, text: (page.events.length === 0 ? `no events for ${id}` : page.events.map(eventLine).join("\n")) + more(page.nextCursor) };
  },
  async "check-lease"({ id, flags, client }) {
    const owner = required(flags, "owner", "the lease's owner");
    const fence = requiredInteger(flags, "fence");
    const answer = await client.checkLease(id, { owner, fence });
    return answer.current
      ? { json: answer, text: `${owner}/${fence} is the current lease of ${id}, until ${at(answer.until)}` }
      : { json: answer, text: `${owner}/${fence} is not the current lease of ${id}; the job's fence is ${answer.fence}`, code: EXIT.refused };
  },
  async stats({ client }) {
    const queues = await client.stats();
    return { json: { queues }, text: queues.length === 0 ? "no jobs" : queues.map(statsLine).join("\n") };
  },
};

// The server-side commands load the server, the database and the migrations
// only when they run, so that the job commands start quickly.

async function serve(io: Io): Promise<number> {
  const { serverConfigFromEnv, startServer } = await import("../server.ts");
  const log = (line: string) => io.out(`${new Date().toISOString()} ${line}`);
  const config = { ...serverConfigFromEnv(io.env), log };
  const server = await startServer(config);
  log(`fencelease listening on ${server.url} (database ${config.databaseUrl}, auth ${config.auth === "off" ? "off" : "on"})`);
  const signal = await new Promise<string>((resolve) => {
    for (const name of ["SIGINT", "SIGTERM"] as const) process.once(name, () => resolve(name));
  });
  log(`${signal}: finishing requests in flight, then closing the database`);
  await server.stop();
  return EXIT.ok;
}

async function migrateDatabase(io: Io): Promise<number> {
  const [{ migrate }, { readMigrations }, { connect }] = await Promise.all([import("../migrate.ts"), import("../migrations-dir.ts"), import("../open.ts")]);
  const url = io.env.DATABASE_URL ?? "file:./data/fencelease.db";
  const client = await connect(url, { authToken: io.env.DATABASE_AUTH_TOKEN });
  try {
    const applied = await migrate(client, await readMigrations());
    io.out(applied.length === 0 ? `${url}: up to date` : `${url}: applied ${applied.join(", ")}`);
    return EXIT.ok;
  } finally {
    client.close();
  }
}

/** `--wait` with no value after it (`get <id> --wait`) is `--wait=`: wait with no time limit. */
function bareWait(argv: string[]): string[] {
  return argv.map((arg, i) => (arg === "--wait" && (i === argv.length - 1 || argv[i + 1]!.startsWith("-")) ? "--wait=" : arg));
}

/** run carries out one command line and answers the exit code. */
export async function run(argv: string[], io: Io): Promise<number> {
  try {
    const { values: flags, positionals } = parseArgs({ args: bareWait(argv), options: OPTIONS, allowPositionals: true, strict: true });
    const [command, id, ...extra] = positionals;
    if (flags.help || command === "help") {
      io.out(USAGE);
      return EXIT.ok;
    }
    if (command === undefined) {
      io.err(USAGE);
      return EXIT.badInput;
    }
    const baseUrl = flags.url ?? io.env.FENCELEASE_URL;
    const token = flags.token ?? io.env.FENCELEASE_TOKEN;
    if (command === "serve") return await serve(io);
    if (command === "migrate") return await migrateDatabase(io);
    if (command === "demo") return await (await import("./demo.ts")).runDemo({ baseUrl, token, out: io.out });

    const handler = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
    if (!handler) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    const argument = Object.hasOwn(ARGUMENT, command) ? ARGUMENT[command] : "a job id";
    const unexpected = argument === null ? id : extra[0];
    if (argument && id === undefined) throw new UsageError(`${command} needs ${argument}`);
    if (unexpected !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(unexpected)}`);
    const client = new LeaseClient({ baseUrl: baseUrl ?? "http://127.0.0.1:8787", token });
    const answer = await handler({ id: id ?? "", flags, client, io });
    // Whatever the server sends back, no escape sequence reaches the terminal.
    io.out(flags.json ? JSON.stringify(answer.json) : answer.text.split("\n").map(printable).join("\n"));
    return answer.code ?? EXIT.ok;
  } catch (error) {
    const usage = (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS") ? new UsageError((error as Error).message) : error;
    const { code, line } = exitFor(usage);
    io.err(`fencelease: ${printable(line)}`);
    return code;
  }
}
