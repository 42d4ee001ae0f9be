import { errorFromStore, UnavailableError } from "../errors.ts";
import { delayBefore, type RetryOptions, type RetryPolicy, retryPolicy } from "../retry.ts";
import type { Call, Transport } from "../transport.ts";
import { InProcessApi } from "./api.ts";
import type { EmbeddedStore } from "./embedded-store.ts";

/** A store in this process: a LeaseClient that calls it directly. */
export type InProcessOptions = {
  /** The store to call: a LeaseStore (`openStore` of fencelease/node, or `new LeaseStore(driver)`). Its connection is the caller's to close. */
  store: EmbeddedStore;
  /** How often, and after how long, a call the database could not serve (StorageUnavailable) is made again: see Repeat for which calls may be. */
  retry?: RetryOptions | undefined;
  /** The clock whose time the store's verbs are given as `now`; default Date.now (tests move one by hand). Clients over one store and one clock wait in one room. */
  clock?: (() => number) | undefined;
};

/**
 * InProcessTransport makes the client's calls on a store in this process
 * (InProcessApi): no request, no JSON, no zod; the answers are those of the
 * routes, and a refusal throws the same typed error the server's answer
 * would (errorFromStore). A call the database could not serve
 * (StorageUnavailable) is made again as its Repeat allows: any call when
 * nothing was applied (busy, locked), only a call safe to repeat when the
 * outcome is unknown; after a capped exponential backoff with full jitter,
 * as no server says when. Clients over one store (and one clock) share a
 * wait room: a write through one wakes the calls another waits in.
 */
export class InProcessTransport implements Transport {
  readonly #api: InProcessApi;
  readonly #retry: RetryPolicy;

  constructor(options: InProcessOptions) {
    if (typeof options.store !== "object" || options.store === null) throw new TypeError("LeaseClient: store must be a LeaseStore");
    this.#api = InProcessApi.of(options.store, options.clock);
    this.#retry = retryPolicy(options.retry);
  }

  /** Makes one call on the store, again while its Repeat allows, and answers what its route answers or throws its typed error. */
  async call<T>({ local, repeat, options }: Call<T>): Promise<T> {
    options?.signal?.throwIfAborted(); // given up before it began: nothing is called, as no request is sent
    for (let attempt = 0; ; attempt++) {
      try {
        return await local(this.#api);
      } catch (error) {
        const refusal = errorFromStore(error);
        const again = refusal instanceof UnavailableError && (repeat === "always" || refusal.details?.outcome === "not_applied");
        if (!again || attempt >= this.#retry.retries || options?.signal?.aborted) throw refusal;
        await this.#retry.sleep(delayBefore(attempt, this.#retry, null));
      }
    }
  }
}
