import type { Statement } from "../../drivers/driver.ts";

// The API tokens of migrations/0030: stored by the SHA-256 of their secret,
// found by it, listed, and deleted to revoke them. Nothing here decides what a
// token may do; src/http/permit.ts does, from the role and queues read here.

/** The columns of a token that anyone may see: everything but the hash. */
const SHOWN = "id, role, queues, name, created_at";

/** A token as stored; `queues` is JSON text. */
export type StoredToken = { id: string; hash: string; role: string; queues: string; name: string | null; createdAt: number };

/** Stores a new token; answers it without its hash. */
export function insertToken(token: StoredToken): Statement {
  return {
    sql: `INSERT INTO tokens (id, hash, role, queues, name, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING ${SHOWN}`,
    args: [token.id, token.hash, token.role, token.queues, token.name, token.createdAt],
  };
}

/** The token whose secret hashes to `hash` (one row or none, by the unique index). */
export function tokenByHash(hash: string): Statement {
  return { sql: `SELECT ${SHOWN} FROM tokens WHERE hash = ?1`, args: [hash] };
}

/** Every token, oldest first (made in the same ms: in the order made). */
export function listTokens(): Statement {
  return { sql: `SELECT ${SHOWN} FROM tokens ORDER BY created_at, rowid`, args: [] };
}

/** Deletes a token, so its secret is refused from now on; answers its id if there was one. */
export function deleteToken(id: string): Statement {
  return { sql: "DELETE FROM tokens WHERE id = ?1 RETURNING id", args: [id] };
}
