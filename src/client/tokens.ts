import type { Transport } from "./transport.ts";
import type { CreatedToken, Token, TokenRequest, TokenSelf } from "./types.ts";

/** What a client in the same process may do: anything, as whoever holds the store may; it has no token. */
const IN_PROCESS_SELF: TokenSelf = { id: null, name: null, role: "admin", queues: ["*"] };

/**
 * TokenCalls are the calls about API tokens, as `client.tokens`: create,
 * list and revoke (for an admin token for every queue), and self (any token).
 */
export class TokenCalls {
  readonly #transport: Transport;

  /** The calls over the client's transport (LeaseClient builds them: use `client.tokens`). */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * create makes a token with a role (admin, producer, worker, reader) and the
   * queues it may touch (names, prefixes such as "mail-*", or ["*"]) and
   * answers it with its secret (`token`), shown this once. Sent again only if
   * the first attempt surely never left: a repeat would make a second token.
   */
  create(request: TokenRequest): Promise<CreatedToken> {
    return this.#transport.call({ route: ["POST", "/v1/tokens", request], local: ({ store, now }) => store.tokens.create({ ...request, now: now() }), repeat: "if-unsent" });
  }

  /** list answers every token made through the API, oldest first, without secrets (`GET /v1/tokens`, unwrapped from `{ tokens }`). */
  async list(): Promise<Token[]> {
    return (await this.#transport.call({ route: ["GET", "/v1/tokens"], local: async ({ store }) => ({ tokens: await store.tokens.list() }), repeat: "always" })).tokens;
  }

  /** revoke revokes a token by its id: refused from the next request on; answers nothing; NotFoundError if there is none. */
  async revoke(id: string): Promise<void> {
    await this.#transport.call({ route: ["DELETE", `/v1/tokens/${encodeURIComponent(id)}`], local: ({ store }) => store.tokens.revoke(id), repeat: "if-unsent" });
  }

  /** self answers what the client's own token may do: its role and queues (`GET /v1/tokens/self`); in the same process, an admin of every queue. */
  self(): Promise<TokenSelf> {
    return this.#transport.call({ route: ["GET", "/v1/tokens/self"], local: async () => IN_PROCESS_SELF, repeat: "always" });
  }
}
