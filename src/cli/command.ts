import type { LeaseClient } from "../client/lease-client.ts";
import type { Flags } from "./flags.ts";

/** Where the CLI writes (stdout for answers, stderr for the one-line errors) and reads standard input from. */
export type Io = { out: (line: string) => void; err: (line: string) => void; env: NodeJS.ProcessEnv; stdin: () => Promise<string> };

/** What a command answers: the server's JSON (for --json), the text for a person, and the exit code when the answer itself is a no (default 0). */
export type Answer = { json: unknown; text: string; code?: number };

/**
 * A command that calls the server: what it takes as its one argument (as the
 * usage error names it, e.g. "a job id"; null for none), and a second one if
 * it takes two (`step <id> <name>`), and how it runs.
 */
export type Command = {
  argument: string | null;
  second?: string;
  run: (args: { arg: string; second: string; flags: Flags; client: LeaseClient; io: Io }) => Promise<Answer>;
};

/** A moment as the CLI prints it: ISO 8601 in UTC. */
export const at = (ms: number) => new Date(ms).toISOString();

/** A word as a shell reads it back: quoted unless it is plain. */
export const shellWord = (word: string) => (/^[\w.,:@%+=\/-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`);

/** Rows of cells as columns, each as wide as its widest cell, without trailing blanks. */
export function columns(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ").trimEnd()).join("\n");
}

/** The line that tells how to get the next page, if there is one. */
export const more = (nextCursor: string | null) => (nextCursor === null ? "" : `\nmore: --cursor ${shellWord(nextCursor)}`);
