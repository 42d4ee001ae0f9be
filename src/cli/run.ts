import { parseArgs } from "node:util";
import { LeaseClient } from "../client/lease-client.ts";
import type { Job, Lease } from "../client/types.ts";
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
  get <id>
  claim <id> --owner O --ttl-ms MS
  claim-next <queue> --owner O --ttl-ms MS [--limit N]
  renew <id> --owner O --fence F --ttl-ms MS
  complete <id> --owner O --fence F --result JSON
  release <id> --owner O --fence F

Options:
  --url URL      the server (FENCELEASE_URL; default http://127.0.0.1:8787)
  --token T      a bearer token (FENCELEASE_TOKEN)
  --json         print the server's JSON answer, for scripts
  --help         this text

Exit codes: 0 ok, 2 bad input, 3 not found, 4 refused (409), 5 unreachable, 6 unauthorized, 1 anything else.`;

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
} as const;

type Flags = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]["type"] extends "boolean" ? boolean : string };

/** Where the CLI writes: stdout for answers, stderr for the one-line errors. */
export type Io = { out: (line: string) => void; err: (line: string) => void; env: NodeJS.ProcessEnv };

/** A command: what it sends, and how it reads back to a person. */
type Command = (args: { id: string; flags: Flags; client: LeaseClient; io: Io }) => Promise<{ json: unknown; text: string }>;

function required(flags: Flags, name: "owner" | "result", what: string): string {
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
  async get({ id, client }) {
    const job = await client.get(id);
    return { json: job, text: jobText(job) };
  },
  async claim({ id, flags, client }) {
    const lease = await client.claim(id, { owner: required(flags, "owner", "who takes the lease"), ttlMs: requiredInteger(flags, "ttl-ms") });
    return { json: lease, text: leaseLine(lease) };
  },
  async "claim-next"({ id: queue, flags, client }) {
    const request = { owner: required(flags, "owner", "who takes the leases"), ttlMs: requiredInteger(flags, "ttl-ms"), limit: integer(flags, "limit") };
    const leases = await client.claimNext(queue, request);
    return { json: { leases }, text: leases.length === 0 ? `nothing due in queue ${queue}` : leases.map(leaseLine).join("\n") };
  },
  async renew({ id, flags, client }) {
    const request = { owner: required(flags, "owner", "the lease's owner"), fence: requiredInteger(flags, "fence"), ttlMs: requiredInteger(flags, "ttl-ms") };
    const until = await client.renew(id, request);
    return { json: { until }, text: `renewed ${id} until ${at(until)}` };
  },
  async complete({ id, flags, client }) {
    const result = json(flags, "result");
    if (result === undefined) throw new UsageError("--result is required: the job's result, as JSON");
    const job = await client.complete(id, { owner: required(flags, "owner", "the lease's owner"), fence: requiredInteger(flags, "fence"), result });
    return { json: { job }, text: `completed ${id} with fence ${job.fence}` };
  },
  async release({ id, flags, client }) {
    const job = await client.release(id, { owner: required(flags, "owner", "the lease's owner"), fence: requiredInteger(flags, "fence") });
    return { json: { job }, text: `released ${id}; its fence stays ${job.fence}` };
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

/** run carries out one command line and answers the exit code. */
export async function run(argv: string[], io: Io): Promise<number> {
  try {
    const { values: flags, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
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

    const handler = COMMANDS[command];
    if (!handler) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    if (id === undefined) throw new UsageError(`${command} needs ${command === "claim-next" ? "a queue" : "a job id"}`);
    if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
    const client = new LeaseClient({ baseUrl: baseUrl ?? "http://127.0.0.1:8787", token });
    const answer = await handler({ id, flags, client, io });
    io.out(flags.json ? JSON.stringify(answer.json) : answer.text);
    return EXIT.ok;
  } catch (error) {
    const usage = (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS") ? new UsageError((error as Error).message) : error;
    const { code, line } = exitFor(usage);
    io.err(`fencelease: ${line}`);
    return code;
  }
}
