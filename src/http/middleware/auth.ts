import type { MiddlewareHandler } from "hono";
import { timingSafeEqual } from "hono/utils/buffer";
import { queueScope, role, type TokenStore } from "../../store/tokens.ts";
import { ApiError } from "../api-error.ts";
import type { Revocations } from "../../wait/revocations.ts";
import { EVERYTHING, type Grant, type JobQueues, Permit } from "../permit.ts";

declare module "hono" {
  interface ContextVariableMap {
    /** What the request's token may do; set by bearerAuth on every route that needs a token. */
    permit: Permit;
  }
}

/** Who may call the API: holders of one of these bearer tokens, or, in local development only, anyone. */
export type Auth = { tokens: readonly string[] } | "off";

/** Reads `FENCELEASE_TOKENS` (one token or a comma-separated list) and `FENCELEASE_AUTH=off`. */
export function authFromEnv(env: { FENCELEASE_TOKENS?: string | undefined; FENCELEASE_AUTH?: string | undefined }): Auth {
  const tokens = (env.FENCELEASE_TOKENS ?? "").split(",").map((token) => token.trim()).filter(Boolean);
  if (tokens.length === 0 && env.FENCELEASE_AUTH === "off") return "off";
  return { tokens };
}

const NOT_CONFIGURED =
  "no API token is configured, so every request is refused: set the FENCELEASE_TOKENS secret " +
  "(`wrangler secret put FENCELEASE_TOKENS`, or the environment variable for the Node server)";

/**
 * Fails closed when no token is configured: every request, /healthz too,
 * answers 503 with the name of the secret to set.
 */
export function requireConfiguredAuth(auth: Auth): MiddlewareHandler {
  const configured = auth === "off" || auth.tokens.length > 0;
  return async function requireConfiguredAuth(_c, next) {
    // Retry-After as every 503 has it: a deployment's secret may be set while its clients wait.
    if (!configured) throw new ApiError(503, "unavailable", NOT_CONFIGURED, { "Retry-After": "60" });
    await next();
  };
}

/** Where bearerAuth finds tokens made through the API, how a permit reads jobs' queues, and what ends a revoked token's waiting calls. */
export type TokenLookup = { tokens: Pick<TokenStore, "find">; jobQueues: JobQueues; revocations?: Revocations };

/** No token made through the API: only the configured ones, each of which may do everything (so no job's queue is ever read). */
const CONFIGURED_ONLY: TokenLookup = { tokens: { find: async () => null }, jobQueues: async () => new Map() };

/**
 * Checks `Authorization: Bearer <token>`: a token made through the API (found
 * by the SHA-256 of the secret), else one of the configured tokens (compared in
 * constant time; admin for every queue). Sets the request's `permit`; with
 * auth off, a permit for everything. Without `lookup`, only the configured
 * tokens are let in.
 */
export function bearerAuth(auth: Auth, { tokens, jobQueues, revocations }: TokenLookup = CONFIGURED_ONLY): MiddlewareHandler {
  const configured = auth === "off" ? [] : auth.tokens;
  // Tokens already proven valid: at most one entry per configured token, so a
  // lookup can only tell a caller what the 200 tells it anyway, and it spares
  // every later request the hashing of the constant-time comparison.
  const proven = new Set<string>();
  // A token made through the API can be revoked: its waiting calls are watched (Permit.whileValid).
  const permit = (grant: Grant, secret?: string) => {
    const { id } = grant;
    const watch = id === null || secret === undefined || revocations === undefined ? undefined : (signal: AbortSignal) => revocations.watch({ id, secret }, signal);
    return new Permit(grant, jobQueues, watch);
  };
  return async function bearerAuth(c, next) {
    if (auth === "off") {
      c.set("permit", permit(EVERYTHING));
      return next();
    }
    const header = c.req.header("Authorization");
    const given = /^Bearer +(\S+) *$/i.exec(header ?? "")?.[1];
    c.set("permit", permit(given === undefined ? refused(header) : await grantOf(given), given));
    await next();
  };

  async function grantOf(given: string): Promise<Grant> {
    if (proven.has(given)) return EVERYTHING;
    // A token made through the API first: a cached one is then found without
    // the hashing of the comparisons below. A database that cannot answer
    // still lets a configured token in.
    let unavailable: unknown;
    const token = await tokens.find(given).catch((error: unknown) => {
      unavailable = error;
      return null;
    });
    if (token) return { id: token.id, name: token.name, role: token.role, queues: token.queues };
    // Compare with every configured token, so the time taken says nothing about which one nearly matched.
    const matches = await Promise.all(configured.map((configuredToken) => timingSafeEqual(configuredToken, given)));
    if (matches.includes(true)) {
      proven.add(given);
      return EVERYTHING;
    }
    if (unavailable !== undefined) throw unavailable;
    return refused("Bearer");
  }
}

/** The 401 of a request without a valid token. */
function refused(header: string | undefined): never {
  const message = header === undefined ? "send the header Authorization: Bearer <token>" : "the bearer token is not valid (or was revoked)";
  throw new ApiError(401, "unauthorized", message, { "WWW-Authenticate": 'Bearer realm="fencelease"' });
}

/** The header in which a router in front (objects mode's) sends what the caller's token may do. */
export const GRANT_HEADER = "Fencelease-Grant";

/** A grant as GRANT_HEADER carries it: its JSON, URI-encoded (queue names may be any text). */
export function grantHeader(grant: Grant): string {
  return encodeURIComponent(JSON.stringify(grant));
}

/**
 * For an app that only a router reaches, which has checked the caller (a
 * queue's Durable Object, whose app runs with auth off): the request's permit
 * becomes the grant the router sends in GRANT_HEADER. The router removes the
 * header from what a caller sends, so only its own reaches here; a request
 * without one is the router's own call, and keeps auth off's permit.
 */
export function forwardedGrant(jobQueues: JobQueues): MiddlewareHandler {
  return async function forwardedGrant(c, next) {
    const permit = forwardedPermit(c.req.raw.headers, jobQueues);
    if (permit !== null) c.set("permit", permit);
    await next();
  };
}

/** The permit of the grant a router sent in GRANT_HEADER (see forwardedGrant); null for the router's own call, which sends none. */
export function forwardedPermit(headers: Headers, jobQueues: JobQueues): Permit | null {
  const sent = headers.get(GRANT_HEADER);
  if (sent === null) return null;
  const grant = JSON.parse(decodeURIComponent(sent)) as Grant;
  return new Permit({ id: grant.id, name: grant.name, role: role(grant.role), queues: queueScope(grant.queues) }, jobQueues);
}

/** Host names that only this machine answers to. */
function loopback(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  return host === "localhost" || host.endsWith(".localhost") || /^127(\.\d{1,3}){3}$/.test(host) || host === "[::1]" || host === "::1";
}

/**
 * With auth off, answers only this machine's own callers: a `Host` that is a
 * loopback name (so DNS rebinding, which keeps the attacker's host name, is
 * refused) and no `Origin` but a loopback one (so a web page elsewhere cannot
 * make the browser post to us). Everything else is 403.
 */
export function localCallersOnly(auth: Auth): MiddlewareHandler {
  return async function localCallersOnly(c, next) {
    if (auth !== "off") return next();
    const host = new URL(c.req.url).hostname;
    if (!loopback(host)) throw new ApiError(403, "forbidden", `with auth off only this machine may call, by a loopback name such as 127.0.0.1 or localhost; the Host ${host} is not one (set FENCELEASE_TOKENS to serve other hosts)`);
    const origin = c.req.header("Origin");
    if (origin !== undefined && !loopback(URL.canParse(origin) ? new URL(origin).hostname : "")) {
      throw new ApiError(403, "forbidden", `with auth off no other site may call; the Origin ${origin} is not this machine`);
    }
    await next();
  };
}
