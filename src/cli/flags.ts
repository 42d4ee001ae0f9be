import { parseArgs } from "node:util";
import { UsageError } from "./exit-codes.ts";
import { FLAG_OF_FIELD } from "./field-flags.ts";

/** Every option of every command; parseArgs refuses any other. */
export const OPTIONS = {
  url: { type: "string" },
  token: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
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
  key: { type: "string" },
  "dedup-key": { type: "string" },
  "dedup-ttl-ms": { type: "string" },
  "debounce-ms": { type: "string" },
  "debounce-max-ms": { type: "string" },
  supersede: { type: "boolean" },
  "max-leased-per-key": { type: "string" },
  "key-rate": { type: "string" },
  "key-burst": { type: "string" },
  "ordered-by-key": { type: "string" },
  "fair-by-key": { type: "string" },
  cron: { type: "string" },
  tz: { type: "string" },
  "every-ms": { type: "string" },
  reason: { type: "string" },
  by: { type: "string" },
  progress: { type: "string" },
  endpoint: { type: "string" },
  "timeout-ms": { type: "string" },
  "max-in-flight": { type: "string" },
  role: { type: "string" },
  queues: { type: "string" },
  name: { type: "string" },
  "id-prefix": { type: "string" },
  "created-from": { type: "string" },
  "created-to": { type: "string" },
  "finished-from": { type: "string" },
  "finished-to": { type: "string" },
  "dry-run": { type: "boolean" },
  step: { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
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

/** A moment option: ms since the epoch, or an ISO 8601 time with its zone (as the CLI prints them); undefined when not given. */
export function moment(flags: Flags, name: "run-at" | "created-from" | "created-to" | "finished-from" | "finished-to" | "from" | "to"): number | undefined {
  const value = flags[name];
  if (value === undefined || /^-?\d+$/.test(value.trim())) return integer(flags, name);
  const ms = /\d{4}-\d\d-\d\dT.*(Z|[+-]\d\d:?\d\d)$/i.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw new UsageError(`--${name} must be ms since the epoch or an ISO time with its zone (2026-12-01T09:00:00Z), got ${JSON.stringify(value)}`);
  return ms;
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
function bareWait(argv: string[]): string[] {
  return argv.map((arg, i) => (arg === "--wait" && (i === argv.length - 1 || argv[i + 1]!.startsWith("-")) ? "--wait=" : arg));
}

/**
 * The options and positionals of a command line. Node's parser is asked for
 * its tokens rather than to refuse (its messages quote badly and suggest
 * nothing), and each option is checked here: an unknown one is named with the
 * option that was likely meant; one that needs a value and got none, or the
 * next option in its place, says so. A value may start with one dash
 * (`--priority -1`).
 */
export function parseFlags(argv: string[]): { flags: Flags; positionals: string[] } {
  const args = bareWait(argv);
  const { values, positionals, tokens } = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: false, tokens: true });
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    const typed = args[token.index]!.split("=")[0]!; // as typed: parseArgs splits -abc into -a, -b, -c
    const known = Object.hasOwn(OPTIONS, token.name) ? OPTIONS[token.name as keyof typeof OPTIONS] : undefined;
    const option = known && (typed.startsWith("--") || ("short" in known && typed === `-${known.short}`)) ? known : undefined;
    if (option === undefined) throw new UsageError(unknownOption(typed));
    if (option.type === "boolean" && token.value !== undefined) throw new UsageError(`${typed} takes no value, got ${JSON.stringify(token.value)}`);
    if (option.type === "string" && (token.value === undefined || (!token.inlineValue && token.value.startsWith("--")))) {
      throw new UsageError(`${typed} needs a value${token.value === undefined ? "" : `, got the option ${token.value}`}`);
    }
  }
  return { flags: values as Flags, positionals };
}

/** The line for an option no command takes, with the one (or ones) likely meant. */
function unknownOption(typed: string): string {
  const meant = optionsMeant(typed.replace(/^-+/, ""));
  return `unknown option ${typed}${meant.length === 0 ? "" : `; did you mean ${meant.map((name) => `--${name}`).join(" or ")}?`}`;
}

/**
 * The options a mistyped name likely meant: the option of an API field
 * (ttlMs, timezone), the name in kebab case, the options it begins or ends
 * (--ttl for --ttl-ms, --queues for --queue), else those a typo or two away.
 */
function optionsMeant(name: string): string[] {
  const names = Object.keys(OPTIONS);
  const field = Object.hasOwn(FLAG_OF_FIELD, name) ? FLAG_OF_FIELD[name]! : undefined;
  if (field !== undefined) return [field];
  const kebab = name.replace(/([a-z0-9])([A-Z])/g, "$1-$2").replaceAll("_", "-").toLowerCase();
  if (names.includes(kebab)) return [kebab];
  if (kebab.length >= 2) {
    const prefixed = names.filter((option) => option.startsWith(kebab) || kebab.startsWith(option));
    if (prefixed.length > 0) return prefixed;
  }
  const distances = names.map((option) => ({ option, distance: editDistance(kebab, option) }));
  const best = Math.min(...distances.map(({ distance }) => distance));
  return best <= Math.min(2, Math.floor(kebab.length / 2)) ? distances.filter(({ distance }) => distance === best).map(({ option }) => option) : [];
}

/** How many one-character insertions, deletions or substitutions turn a into b (Levenshtein). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}
