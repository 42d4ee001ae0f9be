import { createRoute, z } from "@hono/zod-openapi";
import { MAX_TOKEN_QUEUES, ROLES, type TokenStore } from "../store/tokens.ts";
import type { Revocations } from "../wait/revocations.ts";
import { type Api, error, json, refusals, requestBody } from "./resource.ts";
import { body, label } from "./shapes.ts";

// The API tokens: make one (its secret shown once), list them, revoke one, and
// ask what the token of the request may do. Only an admin token for every
// queue may make, list or revoke them (src/http/permit.ts); any token may ask
// about itself.

/** The tag of these routes in the OpenAPI document. */
export const TOKENS_TAG = { name: "tokens", description: "API tokens, each limited to a role (admin, producer, worker, reader) and to some queues: make one (its secret shown once), list them, revoke one, and ask what the calling token may do." };

const Role = z.enum(ROLES, { error: `must be one of ${ROLES.join(", ")}` }).openapi({ description: "admin: everything; producer: enqueue; worker: claim and hold leases; reader: read only. Every role reads its queues" });

const Queues = z
  .array(label(), { error: "must be a list of queue names or prefixes" })
  .min(1, { error: 'must name at least one queue, or ["*"] for every queue' })
  .max(MAX_TOKEN_QUEUES, { error: `must name at most ${MAX_TOKEN_QUEUES} queues` })
  .openapi({ example: ["invoices", "mail-*"], description: 'Queue names, and prefixes ending in * ("mail-*" is every queue whose name starts with mail-); ["*"] is every queue' });

/** A token as anyone may see it: never its secret. */
export const TokenSchema = z
  .object({
    id: z.string().openapi({ example: "tok_5f0c2a9e41b7d3c8" }),
    name: z.string().nullable(),
    role: Role,
    queues: z.array(z.string()),
    createdAt: z.number().int(),
  })
  .openapi("Token");

/** What POST /v1/tokens makes a token of. */
export const CreateTokenBody = body({ role: Role, queues: Queues, name: label().optional().openapi({ example: "invoice workers" }) });

/** A token just made: what it is, and its secret, shown this once. */
export const CreatedTokenSchema = TokenSchema.extend({ token: z.string().openapi({ description: "The secret, to send as Authorization: Bearer <token>; never shown again" }) }).openapi("CreatedToken");

/** What GET /v1/tokens/self answers: the calling token's role and queues. */
export const TokenSelfSchema = z.object({ id: z.string().nullable(), name: z.string().nullable(), role: Role, queues: z.array(z.string()) }).openapi("TokenSelf");

const TokenIdParam = z.object({ id: label().openapi({ param: { name: "id", in: "path" }, example: "tok_5f0c2a9e41b7d3c8" }) });

/** The token routes. */
export function tokenRoutes() {
  return {
    createToken: createRoute({
      method: "post",
      path: "/v1/tokens",
      tags: [TOKENS_TAG.name],
      operationId: "createToken",
      summary: "Make a token with a role and queues; its secret is in this answer only, and is stored as its SHA-256",
      request: requestBody(CreateTokenBody),
      responses: {
        201: json(CreatedTokenSchema, "The token, with its secret"),
        ...refusals,
      },
    }),
    listTokens: createRoute({
      method: "get",
      path: "/v1/tokens",
      tags: [TOKENS_TAG.name],
      operationId: "listTokens",
      summary: "Every token made through the API, oldest first, without secrets (the FENCELEASE_TOKENS are not among them)",
      responses: { 200: json(z.object({ tokens: z.array(TokenSchema) }), "The tokens"), ...refusals },
    }),
    revokeToken: createRoute({
      method: "delete",
      path: "/v1/tokens/{id}",
      tags: [TOKENS_TAG.name],
      operationId: "revokeToken",
      summary: "Revoke a token: refused from the next request on, and its waiting calls end with 401, handed nothing (by another server process sharing the database, within the token cache's 5 s)",
      request: { params: TokenIdParam },
      responses: { 200: json(z.object({ revoked: z.literal(true) }), "Revoked"), 404: error("not_found: no token has this id"), ...refusals },
    }),
    tokenSelf: createRoute({
      method: "get",
      path: "/v1/tokens/self",
      tags: [TOKENS_TAG.name],
      operationId: "getTokenSelf",
      summary: "What the token of this request may do: its role and queues (id and name null for a FENCELEASE_TOKENS token, or with auth off)",
      responses: {
        200: json(TokenSelfSchema, "The calling token"),
        401: refusals[401],
        403: refusals[403],
        500: refusals[500],
        503: refusals[503],
      },
    }),
  };
}

/** Serves the token routes on `app`, over `tokens`; a revoke ends the token's waiting calls through `revocations`. */
export function serveTokens(app: Api, route: ReturnType<typeof tokenRoutes>, tokens: TokenStore, clock: () => number, revocations: Revocations): void {
  app.openapi(route.createToken, async (c) => {
    c.get("permit").needTokens();
    return c.json(await tokens.create({ ...c.req.valid("json"), now: clock() }), 201);
  });

  app.openapi(route.listTokens, async (c) => {
    c.get("permit").needTokens();
    return c.json({ tokens: await tokens.list() }, 200);
  });

  app.openapi(route.tokenSelf, async (c) => c.json(c.get("permit").grant, 200));

  app.openapi(route.revokeToken, async (c) => {
    c.get("permit").needTokens();
    const { id } = c.req.valid("param");
    await tokens.revoke(id);
    await revocations.revoked(id); // its waiting calls here end now; elsewhere, at their next lookup
    return c.json({ revoked: true as const }, 200);
  });
}
