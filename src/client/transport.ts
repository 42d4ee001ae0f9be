import type { InProcessApi } from "./in-process/api.ts";

// The seam between LeaseClient and how its calls reach fencelease: over HTTP
// to a server (HttpTransport), or to a store in the same process
// (InProcessTransport). Each call is written once, in LeaseClient and its
// `queues`, `schedules`, `push` and `tokens`, in both forms side by side, with
// the one rule of whether it may be sent again; a transport takes the form it
// speaks and applies the rule.

/**
 * Whether a call may be sent again after a failure whose outcome is unknown:
 * over HTTP, the connection broke after the request went out, no answer came
 * within `timeoutMs`, or a 503 whose `details.outcome` is "unknown"; in the
 * same process, the store's StorageUnavailable with outcome "unknown" (a
 * remote database's connection broke).
 *
 * The rule, one per call (a test sends each with its answer lost and checks it):
 * - "always", its repeat changes nothing more: every read (`get`, `waitFor`,
 *   `list`, `events`, `checkLease`, `queues.stats`, `queues.get`,
 *   `queues.list`, `queues.keys`, `queues.series`, `schedules.get`, `schedules.list`, `push.get`, `push.list`); `enqueue` and
 *   `enqueueMany` (an id that exists is left untouched); `renew` and
 *   `renewMany` (the same lease extended again); `step` (a step recorded
 *   already is answered as recorded, `recorded: false`); `complete` and
 *   `completeMany` without `next` (the server answers the same completion
 *   again as done); `cancel` (a cancelled job is answered as it is);
 *   `bulk` with `dryRun` (it only counts);
 *   `queues.pause`, `queues.resume` and `queues.set` (they set a state, not
 *   change it by a step); `schedules.put` (the same schedule again keeps its
 *   next fire).
 * - "if-unsent", only when the first attempt is known not to have been
 *   applied (the connection was refused, the host not found, or a 503 whose
 *   `details.outcome` is "not_applied"): `claim` and `claimNext`, and
 *   `complete` or `completeMany` with `next` (a repeat would take more jobs);
 *   `release` and `fail` (a repeat is refused once the lease is gone);
 *   `retry` (refused once the job is no longer dead); `bulk` (a repeat
 *   would count what the first did as skipped); `delete`,
 *   `schedules.delete` and `push.delete` (NotFoundError once it is gone);
 *   `push.set` and `push.rotate` (a repeat would answer no secret, or a
 *   second one that drops the first).
 * A repeat that landed twice answers as a second call would: `enqueue` says
 * `created: false` and `cancel` says `changed: false` although the first
 * attempt, whose answer was lost, did create or cancel it.
 */
export type Repeat = "always" | "if-unsent";

/** What one call may add: how long the server may wait before answering (a long poll), and a signal to give up. */
export type CallOptions = { waitMs?: number | undefined; signal?: AbortSignal | undefined };

/**
 * One call of the client in both its forms: `route`, the request it is over
 * HTTP (method, path, JSON body), and `local`, the same call made on the store
 * in this process; each answers what the route answers. With whether it may
 * be sent again (Repeat) and what it may add (CallOptions).
 */
export type Call<T> = {
  route: [method: string, path: string, body?: unknown];
  local: (api: InProcessApi) => Promise<T>;
  repeat: Repeat;
  options?: CallOptions | undefined;
};

/** How a LeaseClient's calls reach fencelease: each call answers what its route answers, or throws the refusal's typed error. */
export interface Transport {
  /** Makes one call in the form this transport speaks, sending it again as its Repeat allows. */
  call<T>(call: Call<T>): Promise<T>;
}
