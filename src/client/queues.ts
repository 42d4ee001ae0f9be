import { queryString } from "./http-transport.ts";
import type { Transport } from "./transport.ts";
import type { KeyPage, KeysRequest, QueueSettings, QueueSettingsRequest, QueueStats, Series, SeriesRequest } from "./types.ts";

/**
 * QueueCalls are the calls about whole queues, as `client.queues`: their
 * numbers (stats), pause and resume, their limits and those of their keys
 * (set, get, list), their keys with open jobs (keys), and what each did
 * over time (series). A
 * queue needs no creating: one is named by its jobs or its settings.
 */
export class QueueCalls {
  readonly #transport: Transport;

  /** The calls over the client's transport (LeaseClient builds them: use `client.queues`). */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * stats answers, per queue in name order, the jobs by status, the oldest due
   * job's age, the refused stale writes and whether it is paused
   * (`GET /v1/stats`, unwrapped from `{ queues }`).
   */
  async stats(): Promise<QueueStats[]> {
    return (await this.#transport.call({ route: ["GET", "/v1/stats"], local: async ({ store, now }) => ({ queues: await store.stats({ now: now() }) }), repeat: "always" })).queues;
  }

  /** pause stops claims from handing out the queue's jobs until resume; leases already held go on. Answers its settings. */
  pause(queue: string): Promise<QueueSettings> {
    return this.#transport.call({ route: ["POST", `${queuePath(queue)}/pause`], local: ({ store, now }) => store.queues.pause(queue, { now: now() }), repeat: "always" });
  }

  /** resume lets claims take the queue's jobs again; answers its settings. */
  resume(queue: string): Promise<QueueSettings> {
    return this.#transport.call({ route: ["POST", `${queuePath(queue)}/resume`], local: (api) => api.queueOpened(api.store.queues.resume(queue, { now: api.now() })), repeat: "always" });
  }

  /**
   * set sets all of the queue's limits at once (null or absent: none):
   * `maxLeased`, and `ratePerSecond` with `burst` (default max(1,
   * ceil(ratePerSecond))); per key, `maxLeasedPerKey`, `keyRatePerSecond`
   * with `keyBurst` (the same default), `orderedByKey` and `fairByKey`
   * (absent: false); keeps whether it is paused; answers its settings.
   * InvalidRequestError names a bad field.
   */
  set(queue: string, settings: QueueSettingsRequest): Promise<QueueSettings> {
    return this.#transport.call({ route: ["PUT", queuePath(queue), settings], local: (api) => api.queueOpened(api.store.queues.set(queue, { ...settings, now: api.now() })), repeat: "always" });
  }

  /** get answers the queue's settings; a queue never set is not paused and has no limits. */
  get(queue: string): Promise<QueueSettings> {
    return this.#transport.call({ route: ["GET", queuePath(queue)], local: ({ store }) => store.queues.get(queue), repeat: "always" });
  }

  /**
   * keys answers a page `{ keys, nextCursor }` of the queue's keys that have
   * open jobs (`GET /v1/queues/:queue/keys`), in key order, each with its
   * waiting jobs, its current leases and why it holds jobs back (limit 1 to
   * 1000, default 100); pass `nextCursor` back as `cursor` for the next page,
   * until it is null.
   */
  keys(queue: string, request: KeysRequest = {}): Promise<KeyPage> {
    return this.#transport.call({
      route: ["GET", `${queuePath(queue)}/keys${queryString(request)}`],
      local: async ({ store, now }) => {
        const page = await store.queues.keys(queue, { ...request, now: now() });
        return { keys: page.keys, nextCursor: page.next };
      },
      repeat: "always",
    });
  }

  /**
   * series answers what the queue did, a point a step (`GET
   * /v1/queues/:queue/series`): jobs enqueued, completed, failed, expired
   * and dead, refused writes, and its completed jobs' wait and run
   * quantiles. `step` is whole minutes (default 60000); `from` defaults to 59
   * steps before `to`, `to` to now; at most 1,440 points, else InvalidRequestError.
   */
  series(queue: string, request: SeriesRequest = {}): Promise<Series> {
    return this.#transport.call({
      route: ["GET", `${queuePath(queue)}/series${queryString(request)}`],
      local: ({ store, now }) => store.queues.series(queue, { ...request, now: now() }),
      repeat: "always",
    });
  }

  /** list answers the settings of every queue that has settings or jobs, by name (`GET /v1/queues`, unwrapped from `{ queues }`). */
  async list(): Promise<QueueSettings[]> {
    return (await this.#transport.call({ route: ["GET", "/v1/queues"], local: async ({ store }) => ({ queues: await store.queues.list() }), repeat: "always" })).queues;
  }
}

/** The path of a queue, its name encoded. */
export function queuePath(queue: string): string {
  return `/v1/queues/${encodeURIComponent(queue)}`;
}
