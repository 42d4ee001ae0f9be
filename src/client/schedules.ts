import type { Transport } from "./transport.ts";
import type { Schedule, ScheduleRequest } from "./types.ts";

/**
 * ScheduleCalls are the calls about recurring schedules, as
 * `client.schedules`: put, get, list and delete. The server fires them; each
 * fire enqueues one job.
 */
export class ScheduleCalls {
  readonly #transport: Transport;

  /** The calls over the client's transport (LeaseClient builds them: use `client.schedules`). */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * put creates or replaces a recurring schedule: each fire (of `cron`, read
   * in `timezone`, or every `everyMs`) enqueues the job `{name}@{fire time as
   * ISO 8601}` in `queue`. Answers the schedule, its `nextFireAt` the first
   * fire after now (a replace that keeps the timing keeps its next fire).
   * InvalidRequestError names a bad field.
   */
  put(name: string, request: ScheduleRequest): Promise<Schedule> {
    return this.#transport.call({ route: ["PUT", schedulePath(name), request], local: async ({ store, now }) => (await store.schedules.put(name, { ...request, now: now() })).schedule, repeat: "always" });
  }

  /** get answers a schedule; NotFoundError if there is none of that name. */
  get(name: string): Promise<Schedule> {
    return this.#transport.call({ route: ["GET", schedulePath(name)], local: ({ store }) => store.schedules.get(name), repeat: "always" });
  }

  /** list answers every schedule, by name (`GET /v1/schedules`, unwrapped from `{ schedules }`). */
  async list(): Promise<Schedule[]> {
    return (await this.#transport.call({ route: ["GET", "/v1/schedules"], local: async ({ store }) => ({ schedules: await store.schedules.list() }), repeat: "always" })).schedules;
  }

  /** delete deletes a schedule, which never fires again (the jobs it enqueued stay); answers nothing; NotFoundError if there is none. */
  async delete(name: string): Promise<void> {
    await this.#transport.call({ route: ["DELETE", schedulePath(name)], local: ({ store }) => store.schedules.delete(name), repeat: "if-unsent" });
  }
}

/** The path of a schedule, its name encoded. */
function schedulePath(name: string): string {
  return `/v1/schedules/${encodeURIComponent(name)}`;
}
