import type { Token, TokenSelf } from "../client/types.ts";
import { at, type Command, columns } from "./command.ts";
import { UsageError } from "./exit-codes.ts";
import type { Flags } from "./flags.ts";

// The commands about API tokens: make one (its secret printed this once),
// list them, revoke one, and ask what the CLI's own token may do.

/** A token's role and queues in words: `worker for invoices, mail-*`, `reader for every queue`. */
const scope = (token: Pick<Token, "role" | "queues">) => `${token.role} for ${token.queues.includes("*") ? "every queue" : token.queues.join(", ")}`;

/** A token as cells: its id, what it may do, its name, when it was made. */
const tokenCells = (token: Token) => [token.id, scope(token), token.name === null ? "-" : JSON.stringify(token.name), `made ${at(token.createdAt)}`];

/** What `token self` says of the calling token. */
function selfLine(self: TokenSelf): string {
  if (self.id === null) return `this token: ${scope(self)} (one of FENCELEASE_TOKENS, or auth is off)`;
  return `this token: ${scope(self)} (${self.id}${self.name === null ? "" : `, ${JSON.stringify(self.name)}`})`;
}

/** --queues as a list: names and prefixes, comma-separated. */
function queuesOf(value: string | undefined): string[] {
  if (value === undefined) throw new UsageError('--queues is required: the queues the token may touch, comma-separated ("invoices,mail-*"), or "*" for every queue');
  return value.split(",").map((queue) => queue.trim());
}

/**
 * The options only `token create` takes, each with the option another command
 * line more likely meant: every command is parsed with every option, so
 * `enqueue x --queues q` would otherwise enqueue into default without a word.
 */
export const TOKEN_CREATE_FLAGS = { role: null, queues: "--queue", name: null } as const;

/** Refuses an option of `token create` on another command's line. */
export function refuseTokenFlags(command: string, flags: Flags): void {
  if (command === "token create") return;
  for (const [flag, meant] of Object.entries(TOKEN_CREATE_FLAGS)) {
    if (flags[flag as keyof typeof TOKEN_CREATE_FLAGS] !== undefined) throw new UsageError(`--${flag} is an option of token create only${meant === null ? "" : `; did you mean ${meant}?`}`);
  }
}

/** tokens, token create, token revoke and token self. */
export const TOKEN_COMMANDS: Record<string, Command> = {
  tokens: {
    argument: null,
    async run({ client }) {
      const tokens = await client.tokens.list();
      return { json: { tokens }, text: tokens.length === 0 ? "no tokens (besides FENCELEASE_TOKENS)" : columns(tokens.map(tokenCells)) };
    },
  },
  "token create": {
    argument: null,
    async run({ flags, client }) {
      if (flags.role === undefined) throw new UsageError("--role is required: admin, producer, worker or reader");
      const made = await client.tokens.create({ role: flags.role as Token["role"], queues: queuesOf(flags.queues), name: flags.name });
      const named = made.name === null ? "" : ` ${JSON.stringify(made.name)}`;
      return { json: made, text: `made token ${made.id}${named}: ${scope(made)}\n${made.token}\nkeep the secret above now: it is never shown again` };
    },
  },
  "token revoke": {
    argument: "a token id",
    async run({ arg: id, client }) {
      await client.tokens.revoke(id);
      return { json: { revoked: true }, text: `revoked token ${id}: refused from now on (by other servers on the same database within 5 s)` };
    },
  },
  "token self": {
    argument: null,
    async run({ client }) {
      const self = await client.tokens.self();
      return { json: self, text: selfLine(self) };
    },
  },
};
