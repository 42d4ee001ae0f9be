import { queuePath } from "./queues.ts";
import type { InProcessApi } from "./in-process/api.ts";
import type { Transport } from "./transport.ts";
import type { PushRequest, PushSettings, PushSettingsWithSecret } from "./types.ts";

/**
 * PushCalls are the calls about a queue's push endpoint, as `client.push`:
 * set, get, list, rotate and delete. While a queue has one, the server claims its
 * due jobs itself and POSTs each there (see verifyPush for the endpoint's side).
 */
export class PushCalls {
  readonly #transport: Transport;

  /** The calls over the client's transport (LeaseClient builds them: use `client.push`). */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * set gives the queue an endpoint (`url`, and optionally `timeoutMs` and
   * `maxInFlight`), or changes it. The first set answers the settings with
   * `secret`, the `whsec_...` that signs the deliveries, shown this once;
   * a later one answers the settings alone, the secret kept. Sent again only
   * if the first attempt never left: a repeat of a create would answer no secret.
   */
  set(queue: string, request: PushRequest): Promise<PushSettings | PushSettingsWithSecret> {
    const local = async ({ store, now }: InProcessApi) => {
      const { created, settings, secret } = await store.push.put(queue, { ...request, now: now() });
      return created ? { ...settings, secret: secret! } : settings;
    };
    return this.#transport.call({ route: ["PUT", pushPath(queue), request], local, repeat: "if-unsent" });
  }

  /** get answers the queue's push settings, without the secret; NotFoundError if it has no endpoint. */
  get(queue: string): Promise<PushSettings> {
    return this.#transport.call({ route: ["GET", pushPath(queue)], local: ({ store }) => store.push.get(queue), repeat: "always" });
  }

  /** list answers the push settings of every pushed queue, by name, without the secrets (`GET /v1/push`, unwrapped from `{ endpoints }`). */
  async list(): Promise<PushSettings[]> {
    return (await this.#transport.call({ route: ["GET", "/v1/push"], local: async ({ store }) => ({ endpoints: await store.push.list() }), repeat: "always" })).endpoints;
  }

  /**
   * rotate answers the settings with a new secret, shown this once:
   * deliveries are signed with it and the one before until the next
   * rotation. NotFoundError if the queue has no endpoint.
   */
  rotate(queue: string): Promise<PushSettingsWithSecret> {
    const local = async ({ store, now }: InProcessApi) => {
      const { settings, secret } = await store.push.rotate(queue, { now: now() });
      return { ...settings, secret };
    };
    return this.#transport.call({ route: ["POST", `${pushPath(queue)}/rotate`], local, repeat: "if-unsent" });
  }

  /** delete stops pushing the queue's jobs (deliveries on their way end as usual); answers nothing; NotFoundError if it has no endpoint. */
  async delete(queue: string): Promise<void> {
    await this.#transport.call({ route: ["DELETE", pushPath(queue)], local: ({ store }) => store.push.delete(queue), repeat: "if-unsent" });
  }
}

/** The path of a queue's push endpoint, its name encoded. */
function pushPath(queue: string): string {
  return `${queuePath(queue)}/push`;
}
