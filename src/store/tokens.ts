import type { Driver, Row } from "../drivers/driver.ts";
import { InvalidArgument, NotFound } from "./errors.ts";
import * as sql from "./sql/tokens.ts";
import * as check from "./validate.ts";

// API tokens: what a token is (a role and the queues it may touch), how its
// secret is made and kept (only the SHA-256 of it, by Web Crypto, which Node
// and Workers both have), and where tokens live (`TokenStore`). What each role
// may do is decided in src/http/permit.ts.

/** What a token may do: `admin` everything (tokens too), `producer` enqueue, `worker` hold leases, `reader` only read; each may read its queues. */
export const ROLES = ["admin", "producer", "worker", "reader"] as const;

/** One of ROLES. */
export type Role = (typeof ROLES)[number];

/** A token as anyone may see it: never its secret. `queues` are names, prefixes ending in `*`, or `["*"]` for every queue. */
export type TokenInfo = { id: string; name: string | null; role: Role; queues: string[]; createdAt: number };

/** What a new token is made of; `now` (ms since the epoch) defaults to Date.now(). */
export type NewToken = { role: Role; queues: string[]; name?: string | null | undefined; now?: number | undefined };

/** A token just made: its secret (`token`), shown this once, and what it is. */
export type CreatedToken = TokenInfo & { token: string };

/**
 * Where tokens are kept. LeaseStore's `tokens` keeps them in its database (D1
 * or libSQL); another place (one global object, when queues live apart) only
 * has to offer these four verbs.
 */
export interface TokenStore {
  /** create makes a token and answers it with its secret, which is never shown again; InvalidArgument for a bad role, queue list or name. */
  create(token: NewToken): Promise<CreatedToken>;
  /** list answers every token, oldest first, without secrets. */
  list(): Promise<TokenInfo[]>;
  /** find answers the token whose secret this is, or null. */
  find(secret: string): Promise<TokenInfo | null>;
  /** revoke deletes a token: its secret is refused from then on; NotFound for an unknown id. */
  revoke(id: string): Promise<void>;
}

/** At most this many queue names and prefixes in one token. */
export const MAX_TOKEN_QUEUES = 100;

/** Whether a token for `queues` covers `queue`: a name equal to it, a prefix (`mail-*`) it starts with, or `*`. */
export function inScope(queues: readonly string[], queue: string): boolean {
  return queues.some((pattern) => (pattern.endsWith("*") ? queue.startsWith(pattern.slice(0, -1)) : queue === pattern));
}

/** A role, checked. */
export function role(value: unknown): Role {
  if (ROLES.includes(value as Role)) return value as Role;
  throw new InvalidArgument(`role must be one of ${ROLES.join(", ")}, got ${check.describe(value)}`);
}

/**
 * A token's queues, checked: 1 to MAX_TOKEN_QUEUES queue names or prefixes (a
 * `*` only at the end), each once; `*` among them stands for all, so it is all.
 */
export function queueScope(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_TOKEN_QUEUES) {
    throw new InvalidArgument(`queues must be a list of 1 to ${MAX_TOKEN_QUEUES} queue names or prefixes such as "mail-*" (["*"] for every queue), got ${Array.isArray(value) ? `${value.length} entries` : check.describe(value)}`);
  }
  const queues = value.map((pattern, i) => {
    const checked = check.name(`queues[${i}]`, pattern);
    if (checked.slice(0, -1).includes("*")) throw new InvalidArgument(`queues[${i}] may have a * only at its end (a prefix, such as "mail-*"), got ${check.describe(pattern)}`);
    return checked;
  });
  return queues.includes("*") ? ["*"] : [...new Set(queues)];
}

/** The most bytes of UTF-8 a token's name may take. */
export const MAX_TOKEN_NAME_BYTES = 255;

/** A token's name, checked: printable text of at most MAX_TOKEN_NAME_BYTES. */
function tokenName(value: unknown): string {
  const name = check.name("name", value);
  if (check.utf8Bytes(name) > MAX_TOKEN_NAME_BYTES) throw new InvalidArgument(`name must be at most ${MAX_TOKEN_NAME_BYTES} bytes of UTF-8, got ${check.utf8Bytes(name)}`);
  return name;
}

/** Bytes as lowercase hex. */
const hex = (bytes: Uint8Array) => Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");

/** Bytes as base64url without padding (base64 has = nowhere else). */
const base64url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");

/** The SHA-256 of a secret, in hex: what the database keeps instead of it. */
export async function hashOf(secret: string): Promise<string> {
  return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(secret))));
}

/** A token as a row of sql/tokens.ts answers it. */
function tokenFromRow(row: Row): TokenInfo {
  return { id: row.id as string, name: row.name as string | null, role: row.role as Role, queues: JSON.parse(row.queues as string), createdAt: row.created_at as number };
}

/**
 * The tokens of a store's database (`store.tokens`): secrets of 32 random
 * bytes (`fl_` and 43 characters of base64url), kept as their SHA-256. A
 * secret is that random, so one round of SHA-256 is enough: there is nothing
 * to guess from its hash, unlike a password.
 */
export class Tokens implements TokenStore {
  readonly #driver: Driver;

  constructor(driver: Driver) {
    this.#driver = driver;
  }

  async create(token: NewToken): Promise<CreatedToken> {
    const stored = {
      role: role(token.role),
      queues: JSON.stringify(queueScope(token.queues)),
      name: token.name == null ? null : tokenName(token.name),
      createdAt: check.instant("now", token.now ?? Date.now()),
    };
    const secret = `fl_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
    const id = `tok_${hex(crypto.getRandomValues(new Uint8Array(8)))}`;
    const [inserted] = await this.#driver.batch([sql.insertToken({ ...stored, id, hash: await hashOf(secret) })]);
    return { ...tokenFromRow(inserted![0]!), token: secret };
  }

  async list(): Promise<TokenInfo[]> {
    return (await this.#driver.run(sql.listTokens())).map(tokenFromRow);
  }

  async find(secret: string): Promise<TokenInfo | null> {
    const [row] = await this.#driver.run(sql.tokenByHash(await hashOf(secret)));
    return row === undefined ? null : tokenFromRow(row);
  }

  async revoke(id: string): Promise<void> {
    const [deleted] = await this.#driver.batch([sql.deleteToken(check.name("id", id))]);
    if (deleted!.length === 0) throw new NotFound(id, `no token has the id ${JSON.stringify(id)}`);
  }
}
