import type { Driver, Row } from "../drivers/driver.ts";
import { newSecret } from "../push/signature.ts";
import { InvalidArgument, NotFound } from "./errors.ts";
import { type Lease, leasesOf } from "./job.ts";
import { followClock } from "./sql/bucket.ts";
import { claimToPush, nextToPush, PUSH_OWNER, retryAfter } from "./sql/claim-next.ts";
import * as sql from "./sql/push.ts";
import * as check from "./validate.ts";

/** A queue's push settings as the API shows them: never its secret. */
export type PushSettings = {
  queue: string;
  /** Where each job is POSTed. */
  url: string;
  /** How long a delivery waits for the endpoint's answer before it counts as failed. */
  timeoutMs: number;
  /** At most this many of the queue's jobs are pushed and not yet answered (or, answered 202, not yet ended) at once. */
  maxInFlight: number;
  /** Whether deliveries are signed with the secret before the last rotation too (until the next one). */
  rotating: boolean;
  /** The last rotation of the secret; null before the first. */
  rotatedAt: number | null;
  createdAt: number;
  updatedAt: number;
};

/** A queue's push settings as a delivery needs them: with the secrets that sign it, the newest first. */
export type PushTarget = PushSettings & { secrets: string[] };

/** What `put` sets: the endpoint's URL, and optionally its timeout and how many deliveries it takes at once. */
export type PushRequest = { url: string; timeoutMs?: number | undefined; maxInFlight?: number | undefined; now?: number | undefined };

/** How a delivery went: a 2xx (success), a 202 (accepted: the endpoint ends the lease itself), another status (failure), no answer in time (timeout), or none at all (unreachable). */
export type DeliveryOutcome = "success" | "accepted" | "failure" | "timeout" | "unreachable";

/** The outcomes, named once. */
export const DELIVERY_OUTCOMES: readonly DeliveryOutcome[] = ["success", "accepted", "failure", "timeout", "unreachable"];

/** One delivery of a lease to its endpoint, as it is recorded among the job's events. */
export type Delivery = {
  lease: Lease;
  outcome: DeliveryOutcome;
  /** The endpoint's status; null when no answer came. */
  status: number | null;
  durationMs: number;
  /** Why it failed; null for success and accepted. */
  error: string | null;
  /** When the answer came (or the delivery was given up). */
  at: number;
};

/** A queue's push numbers: its deliveries ever by outcome, with their total time, and its pushed leases current now. */
export type PushStats = { queue: string; inFlight: number; deliveries: Record<DeliveryOutcome, { count: number; durationMs: number }> };

/** What a push claim answers: the leases taken, the settings to deliver them with (null: the queue has no endpoint), and when the rate limit has its next token if it stopped the claim short. */
export type PushClaim = { leases: Lease[]; target: PushTarget | null; retryAfterMs?: number };

/** The default request timeout of a delivery: 10 s (Standard Webhooks suggests 15 to 30 s; a Worker's waitUntil lasts about 30 s). */
export const DEFAULT_PUSH_TIMEOUT_MS = 10_000;
/** The longest request timeout a queue may set: 5 minutes. */
export const MAX_PUSH_TIMEOUT_MS = 300_000;
/** The default most deliveries in flight at once per queue. */
export const DEFAULT_MAX_IN_FLIGHT = 10;
/** The highest maxInFlight a queue may set. */
export const MAX_IN_FLIGHT = 1_000;
/** The longest endpoint URL. */
export const MAX_URL_LENGTH = 2_048;

function settingsFromRow(row: Row): PushSettings {
  return {
    queue: row.queue as string,
    url: row.url as string,
    timeoutMs: row.timeout_ms as number,
    maxInFlight: row.max_in_flight as number,
    rotating: row.rotating === 1,
    rotatedAt: (row.rotated_at as number | null) ?? null,
    createdAt: row.created_at as number,
    updatedAt: row.updated_at as number,
  };
}

function targetFromRow(row: Row): PushTarget {
  const secrets = [row.secret as string, ...(row.previous_secret === null ? [] : [row.previous_secret as string])];
  return { ...settingsFromRow(row), secrets };
}

/** How an endpoint URL starts: its scheme, http or https in any case, and the "//" of an absolute URL (the URL parser would also take "http:host"). */
export const ENDPOINT_URL_START = /^https?:\/\//i;

/** An endpoint URL: absolute, http: or https: written out, without credentials (they would be sent in every delivery's logs); at most MAX_URL_LENGTH characters (code points). */
function endpointUrl(value: unknown): string {
  const given = check.name("url", value);
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new InvalidArgument(`url must be an absolute http: or https: URL, got ${JSON.stringify(given)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new InvalidArgument(`url must be an http: or https: URL, got ${JSON.stringify(given)}`);
  if (!ENDPOINT_URL_START.test(given)) throw new InvalidArgument(`url must start with http:// or https:// as it is written, got ${JSON.stringify(given)}`);
  if (url.username !== "" || url.password !== "") throw new InvalidArgument("url must not hold a user name or password: each delivery is signed instead (see the secret)");
  const length = [...given].length; // code points, as JSON Schema's maxLength counts
  if (length > MAX_URL_LENGTH) throw new InvalidArgument(`url must be at most ${MAX_URL_LENGTH} characters, got ${length}`);
  return given;
}

/** A whole number in [1, max]. */
function bounded(name: string, value: unknown, max: number): number {
  const number = check.positiveInt(name, value);
  if (number > max) throw new InvalidArgument(`${name} must be at most ${max}, got ${number}`);
  return number;
}

const notFound = (queue: string) => new NotFound(queue, `queue ${JSON.stringify(queue)} has no push endpoint`);

/**
 * The push settings of the queues (`store.push`), over the same Driver, and
 * what push delivery (src/push/) asks of the store beside the lease verbs:
 * its claim, and the record of each delivery.
 */
export class PushEndpoints {
  readonly #driver: Driver;
  readonly #clock: string;

  /** `clock`: the store's clock id (src/store/step-back.ts), which its claims carry. */
  constructor(driver: Driver, clock: string) {
    this.#driver = driver;
    this.#clock = clock;
  }

  /**
   * put gives a queue an endpoint, or changes its URL, timeout and
   * maxInFlight (absent: DEFAULT_PUSH_TIMEOUT_MS, DEFAULT_MAX_IN_FLIGHT),
   * keeping its secret. Answers the settings and, the first time only, the
   * new secret (`whsec_...`): it is never shown again. InvalidArgument,
   * naming the field, and nothing written, for a bad request.
   */
  async put(queue: string, request: PushRequest): Promise<{ created: boolean; settings: PushSettings; secret?: string }> {
    const push = {
      url: endpointUrl(request.url),
      timeoutMs: bounded("timeoutMs", request.timeoutMs ?? DEFAULT_PUSH_TIMEOUT_MS, MAX_PUSH_TIMEOUT_MS),
      maxInFlight: bounded("maxInFlight", request.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT, MAX_IN_FLIGHT),
    };
    const secret = newSecret();
    const [rows] = await this.#driver.batch([sql.putPush(check.name("queue", queue), push, secret, check.instant("now", request.now ?? Date.now()))]);
    const row = rows![0]!;
    const created = row.created === 1;
    return { created, settings: settingsFromRow(row), ...(created && { secret }) };
  }

  /**
   * rotate gives the queue a new secret, and answers it with the settings:
   * deliveries are signed with the new one and the one it replaces until the
   * next rotation, which drops the older. NotFound if the queue has no endpoint.
   */
  async rotate(queue: string, options: { now?: number | undefined } = {}): Promise<{ settings: PushSettings; secret: string }> {
    const secret = newSecret();
    const [rows] = await this.#driver.batch([sql.rotatePush(check.name("queue", queue), secret, check.instant("now", options.now ?? Date.now()))]);
    const row = rows![0];
    if (row === undefined) throw notFound(queue);
    return { settings: settingsFromRow(row), secret };
  }

  /** get answers a queue's push settings, without its secret; NotFound if it has none. */
  async get(queue: string): Promise<PushSettings> {
    const [row] = await this.#driver.run(sql.getPush(check.name("queue", queue)));
    if (row === undefined) throw notFound(queue);
    return settingsFromRow(row);
  }

  /** list answers the push settings of every queue that has an endpoint, by name. */
  async list(): Promise<PushSettings[]> {
    return (await this.#driver.run(sql.listPush())).map(settingsFromRow);
  }

  /**
   * delete stops pushing a queue's jobs: no more are claimed for its
   * endpoint; deliveries on their way end as usual. NotFound if it has none.
   */
  async delete(queue: string): Promise<void> {
    const [deleted] = await this.#driver.batch([sql.deletePush(check.name("queue", queue))]);
    if (deleted!.length === 0) throw notFound(queue);
  }

  /**
   * claim takes up to `limit` due jobs of a pushed queue for delivery, in
   * one transaction with the settings to deliver them with: the claim-next
   * statement, so that pause, maxLeased and the rate limit decide as for any
   * claim, and besides at most the queue's maxInFlight pushed leases (see
   * claimToPush). Each lease is PUSH_OWNER's, for the timeout plus
   * PUSH_SETTLE_MS. A queue without an endpoint gives none. Stopped short by
   * a bucket whose clock stepped back, it follows the clock as claimNext does.
   */
  async claim(queue: string, options: { limit: number; now?: number | undefined }): Promise<PushClaim> {
    const now = check.instant("now", options.now ?? Date.now());
    const name = check.name("queue", queue);
    const limit = check.positiveInt("limit", options.limit);
    // A batch answers the rows of each of its statements, in order.
    const [taken, hints, targets] = await this.#driver.batch([claimToPush(name, now, limit, this.#clock), retryAfter(name, now, this.#clock, limit), sql.pushTarget(name)]);
    const [hint] = hints!;
    const [target] = targets!;
    if (hint?.stepped_back === 1) await this.#driver.batch([followClock(name, now, this.#clock)]);
    return {
      leases: leasesOf(taken!),
      target: target === undefined ? null : targetFromRow(target),
      ...(hint !== undefined && { retryAfterMs: hint.ms as number }),
    };
  }

  /**
   * nextDueAt answers when a pushed queue next has a job to push (maybe
   * already): while its maxInFlight pushed leases are all held, not before
   * the first of them ends (see nextToPush). Null when none will be, or the
   * queue has no endpoint.
   */
  async nextDueAt(queue: string, options: { now?: number | undefined } = {}): Promise<number | null> {
    const [row] = await this.#driver.run(nextToPush(check.name("queue", queue), check.instant("now", options.now ?? Date.now()), this.#clock));
    return (row?.at as number | null | undefined) ?? null;
  }

  /** record writes a delivery among its job's events (kind pushed, action its outcome), before its outcome is written. */
  async record(delivery: Delivery): Promise<void> {
    const { lease, outcome, status, durationMs, error, at } = delivery;
    const row = { id: lease.job.id, queue: lease.job.queue, owner: lease.job.owner!, fence: lease.fence, at, outcome, status, durationMs, error };
    await this.#driver.batch(sql.recordDelivery(row));
  }

  /** stats answers, per queue that has an endpoint or had deliveries, its deliveries by outcome ever and its pushed leases current at `now`. */
  async stats(options: { now?: number | undefined } = {}): Promise<PushStats[]> {
    const rows = await this.#driver.run(sql.pushStats(PUSH_OWNER, check.instant("now", options.now ?? Date.now())));
    const byQueue = new Map<string, PushStats>();
    for (const row of rows) {
      const queue = row.queue as string;
      let stats = byQueue.get(queue);
      if (!stats) {
        const deliveries = Object.fromEntries(DELIVERY_OUTCOMES.map((outcome) => [outcome, { count: 0, durationMs: 0 }])) as PushStats["deliveries"];
        byQueue.set(queue, (stats = { queue, inFlight: row.in_flight as number, deliveries }));
      }
      // A queue without deliveries has one row of NULLs; an outcome this version
      // does not name (a newer server's, on the same database) is left out.
      const outcome = row.outcome as DeliveryOutcome;
      if (DELIVERY_OUTCOMES.includes(outcome)) stats.deliveries[outcome] = { count: row.deliveries as number, durationMs: row.duration_ms as number };
    }
    return [...byQueue.values()];
  }
}
