import type { DurableObjectNamespace } from "@cloudflare/workers-types";
import { GRANT_HEADER, grantHeader } from "../../http/middleware/auth.ts";
import { type Action, type Grant, mayTake } from "../../http/permit.ts";
import type { PushStats } from "../../store/push.ts";
import { byShard, registry } from "./directory.ts";
import type { WorkerEnv } from "./env.ts";
import { NO_QUEUE, QUEUE_HEADER, type QueueObject } from "./queue-object.ts";

/** How many ids the Worker remembers the queue of, per isolate. */
export const REMEMBERED_IDS = 100_000;

/** A request as the router hands it on: its method, URL, headers and signal (or `signal` in its place), its body read once, and what the caller's token may do (none on the open routes). */
export type Call = { request: Request; body: ArrayBuffer | string | null; grant?: Grant; signal?: AbortSignal };

/**
 * The object a call of `action` on `queue` goes to: the queue's, when the
 * call's token may take that action there (or the call has no token: an open
 * route); else the one that holds none, whose app refuses it with the very
 * answer the queue's would give, so that a refused call makes no object.
 */
export function allowedQueue(call: Call, action: Action, queue: string): string {
  return call.grant === undefined || mayTake(call.grant, action, queue) ? queue : NO_QUEUE;
}

/** The object a body's `queue` goes to: its own, or, for what names no queue (not a string, not well-formed text), the one that holds none, whose app says what is wrong. */
export function bodyQueue(queue: unknown): string {
  return typeof queue === "string" && queue.isWellFormed() ? queue : NO_QUEUE;
}

/**
 * Objects is the Worker's side of objects mode: it sends a request to a
 * queue's object, finds the queue of job ids, and lists the queues.
 *
 * Where an id lives: the Worker remembers the queue of each id it has seen in
 * an answer (a job enqueued, a lease handed out, a job read), at most
 * REMEMBERED_IDS per isolate, the oldest forgotten first; else it asks the
 * id's directory shard. What it remembers can only be out of date after the
 * job was deleted and enqueued again in another queue: the queue remembered
 * then answers 404, and the router asks the directory (`locate` with `fresh`).
 * A worker's claim, renew and complete through one isolate cost no directory
 * request at all.
 */
export class Objects {
  readonly #queues: DurableObjectNamespace<QueueObject>;
  readonly #directory: DurableObjectNamespace;
  readonly #remembered = new Map<string, string>();
  readonly #listed = new Set<string>();

  constructor(env: WorkerEnv) {
    this.#queues = env.QUEUES! as unknown as DurableObjectNamespace<QueueObject>;
    this.#directory = env.DIRECTORY!;
  }

  /**
   * send hands `call` to the object of `queue` (NO_QUEUE: the object that
   * holds none), with `body` in place of the call's own if given. The router
   * has checked the caller; only this Worker can reach an object, whose app
   * runs with auth off, so the call goes to it addressed to localhost, without
   * the token or the Origin, and with what the token may do in
   * Fencelease-Grant, which the object's permits decide by (a caller's own
   * Fencelease-Grant never gets through).
   */
  send(queue: string, call: Call, body: Call["body"] = call.body): Promise<Response> {
    const url = new URL(call.request.url);
    url.protocol = "http:";
    url.host = "localhost";
    const headers = new Headers(call.request.headers);
    headers.delete("Authorization");
    headers.delete("Origin");
    headers.delete(GRANT_HEADER);
    if (call.grant !== undefined) headers.set(GRANT_HEADER, grantHeader(call.grant));
    headers.set(QUEUE_HEADER, encodeURIComponent(queue));
    const stub = this.#queues.get(this.#queues.idFromName(queue));
    const init = { method: call.request.method, headers, body, signal: call.signal ?? call.request.signal };
    return stub.fetch(url.href, init as never) as unknown as Promise<Response>;
  }

  /** The push numbers of `queue`, from its object (RPC: no route of the API answers them as data). */
  pushStats(queue: string): Promise<PushStats[]> {
    return this.#queues.get(this.#queues.idFromName(queue)).pushStats() as Promise<PushStats[]>;
  }

  /**
   * locate answers the queue of each of `ids` that has one, from memory
   * first (unless `fresh`), else from the directory, and remembers it; an id
   * no queue holds is left out.
   */
  async locate(ids: string[], fresh = false): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const unknown: string[] = [];
    for (const id of ids) {
      const queue = fresh ? undefined : this.#remembered.get(id);
      if (queue === undefined) unknown.push(id);
      else found.set(id, queue);
    }
    if (unknown.length > 0) {
      const answers = await Promise.all(byShard(this.#directory, unknown).map(([shard, grouped]) => shard.locate(grouped)));
      for (const [id, queue] of answers.flat() as [string, string][]) {
        found.set(id, queue);
        this.learn(id, queue);
      }
    }
    return found;
  }

  /** Whether the queue of `id` came from memory (and so may be out of date). */
  remembers(id: string): boolean {
    return this.#remembered.has(id);
  }

  /** learn remembers that `id` lives in `queue`, forgetting the oldest past REMEMBERED_IDS. */
  learn(id: string, queue: string): void {
    this.#remembered.delete(id);
    this.#remembered.set(id, queue);
    if (this.#remembered.size > REMEMBERED_IDS) this.#remembered.delete(this.#remembered.keys().next().value!);
  }

  /** forget drops what is remembered of `id` (its job is gone, or elsewhere). */
  forget(id: string): void {
    this.#remembered.delete(id);
  }

  /**
   * The object a read of `queue` goes to: as allowedQueue, and the one that
   * holds none when the registry does not list the queue (no object holds
   * anything of it), which answers as an empty queue: a read makes no object.
   * A queue seen listed is remembered (REMEMBERED_IDS at most); one let go of
   * since is asked of its object, which then holds nothing, and answers so.
   */
  async readable(call: Call, queue: string): Promise<string> {
    const allowed = allowedQueue(call, "read", queue);
    if (allowed === NO_QUEUE || this.#listed.has(allowed)) return allowed;
    if (!(await registry(this.#directory).hasQueue(allowed))) return NO_QUEUE;
    this.#listed.add(allowed);
    if (this.#listed.size > REMEMBERED_IDS) this.#listed.delete(this.#listed.values().next().value!);
    return allowed;
  }

  /** Every queue that holds or held something, by name (the registry). */
  queues(): Promise<string[]> {
    return registry(this.#directory).queues();
  }

  /** The registry, for the schedules' homes. */
  get registry() {
    return registry(this.#directory);
  }
}
