import { LeaseClient } from "../client/lease-client.ts";
import { checkedBaseUrl } from "../client/http-transport.ts";
import { printable } from "../store/printable.ts";
import type { Command, Io } from "./command.ts";
import { EXIT, exitFor, UsageError } from "./exit-codes.ts";
import { parseFlags } from "./flags.ts";
import { JOB_COMMANDS } from "./jobs.ts";
import { KEY_COMMANDS } from "./keys.ts";
import { LEASE_COMMANDS } from "./leases.ts";
import { PUSH_COMMANDS } from "./push.ts";
import { QUEUE_COMMANDS } from "./queues.ts";
import { SCHEDULE_COMMANDS } from "./schedules.ts";
import { SEARCH_COMMANDS } from "./search.ts";
import { SERIES_COMMANDS } from "./series.ts";
import { refuseTokenFlags, TOKEN_COMMANDS } from "./tokens.ts";
import { migrateDatabase, serve } from "./server-commands.ts";
import { USAGE } from "./usage.ts";
import { VERSION } from "./version.ts";

export type { Io } from "./command.ts";

// The dispatcher: reads the command line, finds the command, and prints its
// answer (or the one line of its error) with the exit code. Each group of
// commands is a file of its own (jobs.ts, leases.ts, queues.ts, keys.ts, series.ts, push.ts, schedules.ts, tokens.ts).

/** Every command that calls the server, by name. */
export const COMMANDS: Record<string, Command> = { ...JOB_COMMANDS, ...SEARCH_COMMANDS, ...LEASE_COMMANDS, ...QUEUE_COMMANDS, ...KEY_COMMANDS, ...SERIES_COMMANDS, ...PUSH_COMMANDS, ...SCHEDULE_COMMANDS, ...TOKEN_COMMANDS };

/**
 * The command named on the line (one word, or two for a group such as
 * `schedule put`), and its argument, after checking there is no more and no
 * less than it takes.
 */
function commandOf(first: string, positionals: string[]): { command: Command; arg: string; second: string } {
  const group = Object.keys(COMMANDS).filter((key) => key.startsWith(`${first} `)).map((key) => key.slice(first.length + 1));
  const [sub, ...afterSub] = positionals;
  if (group.length > 0 && (sub === undefined || !group.includes(sub))) {
    throw new UsageError(`${first} needs one of ${group.join(", ")}${sub === undefined ? "" : `, got ${JSON.stringify(sub)}`}`);
  }
  const name = group.length > 0 ? `${first} ${sub}` : first;
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) throw new UsageError(`unknown command ${JSON.stringify(name)}`);
  const [arg, ...extra] = group.length > 0 ? afterSub : positionals;
  const second = command.second === undefined ? undefined : extra.shift();
  const unexpected = command.argument === null ? arg : extra[0];
  if (command.argument !== null && arg === undefined) throw new UsageError(`${name} needs ${command.argument}`);
  if (command.second !== undefined && second === undefined) throw new UsageError(`${name} needs ${command.second} after ${command.argument}`);
  if (unexpected !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(unexpected)}`);
  return { command, arg: arg ?? "", second: second ?? "" };
}

/** The server's URL that --url or FENCELEASE_URL gives (none when empty), refused before anything is sent if it is not an http(s) URL. */
function serverUrl(given: string | undefined): string | undefined {
  if (given === undefined || given === "") return undefined;
  try {
    return checkedBaseUrl(given);
  } catch (error) {
    throw new UsageError(`--url (or FENCELEASE_URL) ${(error as Error).message.replace(/^baseUrl /, "")}`);
  }
}

/** run carries out one command line and answers the exit code. */
export async function run(argv: string[], io: Io): Promise<number> {
  try {
    const { flags, positionals } = parseFlags(argv);
    const [name, ...rest] = positionals;
    if (flags.help || name === "help") {
      io.out(USAGE);
      return EXIT.ok;
    }
    if (flags.version) {
      io.out(`fencelease ${VERSION}`);
      return EXIT.ok;
    }
    if (name === undefined) {
      io.err(USAGE);
      return EXIT.badInput;
    }
    const baseUrl = serverUrl(flags.url ?? io.env.FENCELEASE_URL);
    const token = flags.token ?? io.env.FENCELEASE_TOKEN;
    if (name === "serve") return await serve(io);
    if (name === "migrate") return await migrateDatabase(io);
    if (name === "demo") return await (await import("./demo.ts")).runDemo({ baseUrl, token, out: io.out });

    const { command, arg, second } = commandOf(name, rest);
    refuseTokenFlags(name === "token" ? `token ${rest[0]}` : name, flags);
    const client = new LeaseClient({ baseUrl: baseUrl ?? "http://127.0.0.1:8787", token });
    const answer = await command.run({ arg, second, flags, client, io });
    // Whatever the server sends back, no escape sequence reaches the terminal.
    io.out(flags.json ? JSON.stringify(answer.json) : answer.text.split("\n").map(printable).join("\n"));
    return answer.code ?? EXIT.ok;
  } catch (error) {
    const { code, line } = exitFor(error);
    io.err(`fencelease: ${printable(line)}`);
    return code;
  }
}
