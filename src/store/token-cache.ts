import type { TokenInfo, TokenStore } from "./tokens.ts";

/** How long a token found is trusted without asking the database again, by default: the most a revoke made elsewhere waits. */
export const TOKEN_CACHE_MS = 5_000;

/** How many tokens found are kept at most, by default. */
export const TOKEN_CACHE_ENTRIES = 1_000;

/** How a cachedTokens behaves; each option has the default named beside it. */
export type TokenCacheOptions = {
  /** How long a token found is answered from memory; default TOKEN_CACHE_MS. 0 keeps nothing. */
  ttlMs?: number | undefined;
  /** At most this many tokens are kept, the oldest dropped first; default TOKEN_CACHE_ENTRIES. */
  maxEntries?: number | undefined;
  /** The clock, in ms; default Date.now. */
  clock?: (() => number) | undefined;
};

/**
 * cachedTokens answers `find` from memory for up to `ttlMs` after it read a
 * token from `tokens`, so a busy token costs one read of the database per
 * ttlMs instead of one per request.
 *
 * What it guarantees:
 * - A revoke made through it takes effect at once here: the revoked token's
 *   entry is dropped before the revoke answers, and a `find` that was reading
 *   meanwhile keeps nothing, so no request that starts after the revoke
 *   answered is let in by this object.
 * - A revoke made elsewhere (another Node server on the same database, another
 *   Worker isolate) takes effect here within `ttlMs`.
 * - A secret not found is never kept: a wrong token is looked up every time,
 *   so no caller can fill the memory with guesses.
 */
export function cachedTokens(tokens: TokenStore, options: TokenCacheOptions = {}): TokenStore {
  const ttlMs = options.ttlMs ?? TOKEN_CACHE_MS;
  const maxEntries = options.maxEntries ?? TOKEN_CACHE_ENTRIES;
  const clock = options.clock ?? Date.now;
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 0) throw new RangeError(`ttlMs must be a whole number of ms, 0 or more, got ${ttlMs}`);
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) throw new RangeError(`maxEntries must be a positive whole number, got ${maxEntries}`);
  const found = new Map<string, { token: TokenInfo; at: number }>();
  // Moves on as a revoke starts and as it ends: a find whose read overlapped one keeps nothing.
  let revokes = 0;

  return {
    create: (token) => tokens.create(token),
    list: () => tokens.list(),
    async find(secret) {
      const kept = found.get(secret);
      const now = clock();
      // Trusted only between the read and ttlMs later: a clock that stepped back before the read reads again.
      if (kept !== undefined && kept.at <= now && now < kept.at + ttlMs) return kept.token;
      found.delete(secret);
      const seen = revokes;
      const token = await tokens.find(secret);
      if (token !== null && ttlMs > 0 && seen === revokes) {
        found.set(secret, { token, at: clock() });
        if (found.size > maxEntries) found.delete(found.keys().next().value!);
      }
      return token;
    },
    async revoke(id) {
      revokes++;
      try {
        await tokens.revoke(id);
      } finally {
        // After the delete: whatever a find kept meanwhile goes too, and one still reading keeps nothing.
        revokes++;
        for (const [secret, kept] of found) if (kept.token.id === id) found.delete(secret);
      }
    },
  };
}
