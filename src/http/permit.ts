import { NotFound } from "../store/errors.ts";
import type { LeaseOutcome } from "../store/refusal.ts";
import { inScope, type Role, type TokenInfo } from "../store/tokens.ts";
import type { Watch } from "../wait/revocations.ts";
import { ApiError } from "./api-error.ts";

// What the token of a request may do, decided before the call changes
// anything. Every route asks its permit once, in its handler; the table-driven
// test (test/http/permits.test.ts) walks every route of the OpenAPI document
// with every role, so a route that forgets to ask fails there.
//
// The rules, by role (each only within its queues):
//   read:    every role: jobs, their events, the lease check, queues, stats, schedules, /metrics
//   enqueue: producer, admin
//   work:    worker, admin: claim, claim-next, renew, complete, fail, release, and the many-lease calls
//   manage:  admin: retry, cancel, delete; pause, resume and set a queue; put and delete a schedule
//   tokens:  admin for every queue (["*"]): create, list and revoke tokens
// A job in a queue the token may not see is answered as no job at all (404
// not_found, the same words as for an id that does not exist), so a token
// learns nothing of other queues' jobs; a queue it names itself, in a path or
// a body, is refused with 403 forbidden naming the role and queue it needs.

/** What a call does, as a permit decides it. */
export type Action = "read" | "enqueue" | "work" | "manage";

/** Who is calling: a token's role and queues, and its id and name (both null for a bootstrap token of FENCELEASE_TOKENS, or with auth off). */
export type Grant = Pick<TokenInfo, "role" | "queues"> & { id: string | null; name: string | null };

/** What the bootstrap tokens (FENCELEASE_TOKENS), and every caller with auth off, may do: everything. */
export const EVERYTHING: Grant = { id: null, name: null, role: "admin", queues: ["*"] };

/** The roles that may take each action, as a refusal names them. */
const MAY: Record<Action, readonly Role[]> = {
  read: ["reader", "producer", "worker", "admin"],
  enqueue: ["producer", "admin"],
  work: ["worker", "admin"],
  manage: ["admin"],
};

/** A queue name in a message: as it is when plain, else quoted. */
const shown = (queue: string) => (/^[\w.:@*-]+$/.test(queue) ? queue : JSON.stringify(queue));

/** What a refusal says the call would have done. */
const DOING: Record<Action, (queue: string) => string> = {
  read: (queue) => `read ${shown(queue)}`,
  enqueue: (queue) => `enqueue into ${shown(queue)}`,
  work: (queue) => `work the jobs of ${shown(queue)}`,
  manage: (queue) => `manage ${shown(queue)}`,
};

/** "a producer or admin token", "an admin token", "a token" (any role). */
function needed(roles: readonly Role[]): string {
  if (roles.length === MAY.read.length) return "a token";
  return `${roles[0] === "admin" ? "an" : "a"} ${roles.join(" or ")} token`;
}

/** The calling token as a refusal names it: `this token "ci" (worker for invoices, mail-*)`. */
export function describeGrant(grant: Grant): string {
  const queues = grant.queues.includes("*") ? "every queue" : grant.queues.map(shown).join(", ");
  return `this token${grant.name === null ? "" : ` ${JSON.stringify(grant.name)}`} (${grant.role} for ${queues})`;
}

/** The 401 of a waiting call whose token was revoked meanwhile. */
function revokedWhileWaiting(): ApiError {
  return new ApiError(401, "unauthorized", "the bearer token was revoked while this call waited; nothing was handed out", { "WWW-Authenticate": 'Bearer realm="fencelease"' });
}

/** The 403 of a call this token may not make. */
function forbidden(message: string): ApiError {
  return new ApiError(403, "forbidden", message);
}

/** Whether `grant` may take `action` on `queue` (Permit.may, for a router that holds only the grant). */
export function mayTake(grant: Grant, action: Action, queue: string): boolean {
  return MAY[action].includes(grant.role) && inScope(grant.queues, queue);
}

/** Reads the queue of each of the jobs `ids` that exists (`store.queuesOf`): one read, however many ids. */
export type JobQueues = (ids: string[]) => Promise<Map<string, string>>;

/**
 * What one request's token may do (`c.get("permit")`). `jobQueues` is called
 * only when the answer depends on a job's queue, never for a token that may
 * take the action on every queue.
 */
export class Permit {
  readonly grant: Grant;
  readonly #jobQueues: JobQueues;
  readonly #watch: ((signal: AbortSignal) => Watch) | undefined;

  /** `watch` watches a waiting call of this token for its revoke (Revocations.watch); none for a token that cannot be revoked. */
  constructor(grant: Grant, jobQueues: JobQueues, watch?: (signal: AbortSignal) => Watch) {
    this.grant = grant;
    this.#jobQueues = jobQueues;
    this.#watch = watch;
  }

  /**
   * whileValid runs a call that waits (claim-next with waitMs, a job's long
   * poll) with a signal that aborts when `signal` (its client's) does, or when
   * the token is revoked (src/wait/revocations.ts says when that is seen). A
   * wait the revoke ended answers 401 unauthorized, unless its answer hands
   * something out (`handsOut`: leases taken before the revoke), which then
   * reaches the caller; the wait itself gives back what it took after the abort.
   */
  async whileValid<T>(signal: AbortSignal, wait: (signal: AbortSignal) => Promise<T>, handsOut: (answer: T) => boolean = () => false): Promise<T> {
    if (this.#watch === undefined) return wait(signal);
    const watch = this.#watch(signal);
    try {
      const answer = await wait(watch.signal);
      if (watch.revoked && !handsOut(answer)) throw revokedWhileWaiting();
      return answer;
    } catch (error) {
      throw watch.revoked ? revokedWhileWaiting() : error;
    } finally {
      watch.end();
    }
  }

  /** Whether the token may see `queue` at all (any role may read its queues). */
  sees(queue: string): boolean {
    return inScope(this.grant.queues, queue);
  }

  /** Whether the token may take `action` on `queue`. */
  may(action: Action, queue: string): boolean {
    return mayTake(this.grant, action, queue);
  }

  /** The queues a read across queues is limited to (store.list, store.events): the token's, or undefined for every queue. */
  get scope(): readonly string[] | undefined {
    return this.grant.queues.includes("*") ? undefined : this.grant.queues;
  }

  /** Whether the token may take `action` on every queue: then no job's queue needs reading. */
  everywhere(action: Action): boolean {
    return MAY[action].includes(this.grant.role) && this.grant.queues.includes("*");
  }

  /** Refuses (403 forbidden, naming the role and queue needed) an action on a queue the caller named. */
  need(action: Action, queue: string): void {
    if (this.may(action, queue)) return;
    throw forbidden(`${describeGrant(this.grant)} may not ${DOING[action](queue)}: that needs ${needed(MAY[action])} for ${shown(queue)}`);
  }

  /** Refuses (403) a call over many jobs that the token's role may never make, whatever their queues; `doing` says what it is ("renew leases"). */
  needRole(action: Action, doing: string): void {
    if (MAY[action].includes(this.grant.role)) return;
    throw forbidden(`${describeGrant(this.grant)} may not ${doing}: that needs ${needed(MAY[action])}`);
  }

  /**
   * Refuses an action on a job by its id: NotFound when the token may not see
   * the job's queue (so it learns nothing of it), 403 when it sees the queue
   * but may not take the action there.
   *
   * Reading the queue before the write is not a race: a job's queue never
   * changes after it is enqueued. The one way an id could meet another queue
   * in between is a delete (an admin's call, of a job not leased) and a new
   * enqueue of the same id into that queue within those milliseconds.
   */
  async job(action: Action, id: string): Promise<void> {
    if (this.everywhere(action)) return;
    const queue = (await this.#jobQueues([id])).get(id);
    if (queue === undefined || !this.sees(queue)) throw new NotFound(id);
    this.need(action, queue);
  }

  /**
   * For a call over many jobs whose role check passed (needRole): the ids
   * whose queue this token may not see, which the call answers as unknown
   * jobs and leaves alone. Ids of no job are not among them (the store says so itself).
   */
  async hidden(ids: readonly string[]): Promise<Set<string>> {
    if (this.grant.queues.includes("*")) return new Set();
    const queues = await this.#jobQueues([...ids]);
    return new Set(ids.filter((id) => queues.has(id) && !this.sees(queues.get(id)!)));
  }

  /** Refuses (403) managing tokens: only an admin token for every queue may, so no token can make one that may do more than itself. */
  needTokens(): void {
    if (this.grant.role === "admin" && this.grant.queues.includes("*")) return;
    throw forbidden(`${describeGrant(this.grant)} may not manage tokens: that needs an admin token for every queue`);
  }
}

/**
 * A many-lease call's outcomes in the order the leases were sent: those of
 * `hidden` jobs as unknown jobs, the others as the store answered them (the
 * `answered` outcomes of the rest, in their order).
 */
export function unseenAsUnknown<T extends object>(leases: readonly { id: string }[], hidden: Set<string>, answered: LeaseOutcome<T>[]): LeaseOutcome<T>[] {
  const rest = answered[Symbol.iterator]();
  return leases.map(({ id }) => (hidden.has(id) ? { id, error: new NotFound(id) } : rest.next().value!));
}
