import { UsageError } from "./exit-codes.ts";

/** Every option of every command; parseArgs refuses any other. */
export const OPTIONS = {
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
  "max-leased": { type: "string" },
  rate: { type: "string" },
  burst: { type: "string" },
  cron: { type: "string" },
  tz: { type: "string" },
  "every-ms": { type: "string" },
  reason: { type: "string" },
  by: { type: "string" },
  progress: { type: "string" },
  role: { type: "string" },
  queues: { type: "string" },
  name: { type: "string" },
} as const;

/** The options of one command line, as parseArgs gives them. */
export type Flags = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]["type"] extends "boolean" ? boolean : string };

/** A string option that the command cannot do without. */
export function required(flags: Flags, name: "owner" | "result" | "error", what: string): string {
  const value = flags[name];
  if (value === undefined) throw new UsageError(`--${name} is required: ${what}`);
  return value;
}

/** A whole-number option, or undefined when it is not given. */
export function integer(flags: Flags, name: keyof Flags): number | undefined {
  const value = flags[name];
  if (value === undefined) return undefined;
  const number = Number(value);
  if (typeof value !== "string" || value.trim() === "" || !Number.isInteger(number)) throw new UsageError(`--${name} must be a whole number, got ${JSON.stringify(value)}`);
  return number;
}

/** A whole-number option that the command cannot do without. */
export function requiredInteger(flags: Flags, name: "ttl-ms" | "fence"): number {
  const value = integer(flags, name);
  if (value === undefined) throw new UsageError(`--${name} is required`);
  return value;
}

/** A JSON option, parsed, or undefined when it is not given. */
export function json(flags: Flags, name: "payload" | "result" | "progress"): unknown {
  const value = flags[name];
  if (value === undefined) return undefined;
  try {
    return JSON.parse(value);
  } catch {
    throw new UsageError(`--${name} must be JSON (a string needs quotes: '"text"'), got ${value}`);
  }
}

/** `--wait` with no value after it (`get <id> --wait`) is `--wait=`: wait with no time limit. */
export function bareWait(argv: string[]): string[] {
  return argv.map((arg, i) => (arg === "--wait" && (i === argv.length - 1 || argv[i + 1]!.startsWith("-")) ? "--wait=" : arg));
}
