import { DurableObject } from "cloudflare:workers";
import { tryDecodeURIComponent } from "hono/utils/url";
import type { DurableObjectNamespace, DurableObjectState, DurableObjectStub, Request as WorkerRequest, Response as WorkerResponse } from "@cloudflare/workers-types";
import { metered, objectDriver } from "../../drivers/durable-object-sql.ts";
import type { Row } from "../../drivers/driver.ts";
import { createApp } from "../../http/app.ts";
import { errorAnswer } from "../../http/errors.ts";
import { EnqueueBody, EnqueueManyBody, takenUnseen } from "../../http/jobs.ts";
import { forwardedPermit, GRANT_HEADER } from "../../http/middleware/auth.ts";
import { CRON_MAX_CHUNKS, didAnything, maintain, maintainedLine, RETENTION_MS, wakeAfter } from "../../store/maintenance.ts";
import { migrate } from "../../store/migrate.ts";
import type { PushStats } from "../../store/push.ts";
import { LeaseStore } from "../../store/store.ts";
import { pushAfterWrites } from "../../push/after-write.ts";
import { pushDue } from "../../push/push-due.ts";
import { localWaits, type Waits } from "../../wait/long-poll.ts";
import { WaitRoom } from "../../wait/wait-room.ts";
import { Bindings, BINDINGS_SCHEMA } from "./bindings.ts";
import { registry } from "./directory.ts";
import { registrySchedules } from "./registry-schedules.ts";
import { number, type WorkerEnv } from "./env.ts";
import { hasStorage, holdsNothing } from "./empty-object.ts";
import { MIGRATIONS } from "./migrations.ts";
import { QueueAlarm } from "./queue-alarm.ts";

/** The header by which the Worker tells a queue's object its queue (URI-encoded: a queue name may be any printable text). */
export const QUEUE_HEADER = "Fencelease-Queue";

/**
 * The name of the object that holds no queue: the Worker sends it what no
 * queue can answer (a by-id call for an id no queue has, a body too broken to
 * say its queue), and its app refuses it with the very answer a queue's would
 * give. A queue name is never empty, so it is no queue's.
 */
export const NO_QUEUE = "";

// Beside the migrations' tables: the queue this object holds (learned from the
// Worker's first request, needed by the alarm, which has none), and whether the
// registry lists it yet.
const OBJECT_SCHEMA = `
CREATE TABLE IF NOT EXISTS queue_object (one INTEGER PRIMARY KEY CHECK (one = 1), queue TEXT NOT NULL, listed INTEGER NOT NULL DEFAULT 0);
${BINDINGS_SCHEMA}`;

/** How long after a failed alarm it rings again. */
export const ALARM_RETRY_MS = 10_000;

const ENQUEUE_MANY = /^\/v1\/queues\/([^/]+)\/jobs$/;
/** The path of a bulk action, which may delete jobs. */
const BULK = "/v1/jobs/bulk";

/** What this object has served, read and written since it started (`instance`: which start), for the cost tests and the bench: requests as billed (API requests, RPC calls, alarms), rows as billed, alarms set. */
export type Meter = { instance: string; requests: number; rowsRead: number; rowsWritten: number; alarmsSet: number };

/**
 * QueueObject is one queue in objects mode (docs/scale.md): a Durable Object,
 * named by its queue (`idFromName(queue)`), that keeps the queue's jobs,
 * events, settings and schedules in its own SQLite and serves the queue's part
 * of the API with the same app, store and statements as the Node server and
 * the D1 Worker, the migrations/ applied once before it serves.
 *
 * Requests (fetch) come from the Worker's router only, with QUEUE_HEADER:
 * the API's own requests, whose caller the router has checked, addressed to
 * localhost for the app, which runs with auth off here.
 *
 * Waiting and deciding in one place: a claim with waitMs waits in this
 * object's WaitRoom, and every write here rings it as part of the write (the
 * app's own wake, as on the Node server), so nothing is sent after a commit.
 *
 * The alarm (QueueAlarm) rings at the earliest lease end, schedule fire or
 * purge: it ends the expired leases, fires the due schedules, purges (the
 * D1 mode cron's `maintain`, for this queue), wakes the waiters, and arms
 * itself again. It may ring more than once: `maintain` at the same time
 * finds nothing more to do.
 *
 * Enqueues bind their ids in the directory first (Bindings): an id that
 * another queue holds is not created here, and answers as an existing job
 * (or, to a token that may not see that queue, 409 as the app answers it).
 *
 * Failure modes: a failure of the object (restart, eviction while a claim
 * waits) fails the requests in it, which the Worker answers 503 `unavailable`
 * (outcome unknown); an alarm that throws is retried by the runtime.
 */
export class QueueObject extends DurableObject<WorkerEnv> {
  readonly #storage: DurableObjectState["storage"];
  readonly #store: LeaseStore;
  readonly #room: WaitRoom;
  readonly #waits: Waits;
  readonly #app: ReturnType<typeof createApp>;
  readonly #bindings: Bindings;
  readonly #retentionMs: number;
  readonly #meter: Meter = { instance: crypto.randomUUID(), requests: 0, rowsRead: 0, rowsWritten: 0, alarmsSet: 0 };
  readonly #pushing: ReturnType<typeof pushAfterWrites>;
  #alarm!: QueueAlarm;
  #queue: string | null = null;
  #listed = false;
  /** Whether its SQLite is built: not for an object never written, or let go (#letGoIfEmpty). */
  #built = false;
  #building: Promise<void> | undefined;
  /** The calls (requests, RPCs, the alarm) running in this object now. */
  #running = 0;
  /** Whether it may hold nothing now: looked at once nothing runs here. */
  #mayBeEmpty = true;

  constructor(ctx: DurableObjectState, env: WorkerEnv) {
    super(ctx as never, env);
    const storage = metered(ctx.storage, this.#meter);
    this.#storage = storage;
    this.#retentionMs = number(env.RETENTION_MS) ?? RETENTION_MS;
    this.#store = new LeaseStore(objectDriver(storage));
    // No re-check: every write to this queue passes through this object and rings the room itself.
    this.#room = new WaitRoom({ maxWaiting: number(env.MAX_WAITING), recheckMs: 0 });
    this.#waits = localWaits(this.#store, this.#room, Date.now);
    // Push: a write that makes jobs due delivers them after its answer (the object runs on), then arms the
    // alarm for what is due later; this object is the only writer of its push settings, so it never reads them again unasked.
    this.#pushing = pushAfterWrites(this.#waits, { store: this.#store, clock: Date.now, log: (line) => console.error(line), ttlMs: Number.POSITIVE_INFINITY });
    const pushingWaits = this.#pushing.waits;
    this.#app = createApp({
      store: this.#store,
      auth: "off", // only the Worker reaches an object, and its router has checked the caller (objects.ts)
      forwardedGrants: true, // and sends what the caller's token may do
      limits: { maxTtlMs: number(env.MAX_TTL_MS), maxBodyBytes: number(env.MAX_BODY_BYTES) },
      waits: { ...pushingWaits, claimable: (queue, due, at) => afterPushing(pushingWaits.claimable(queue, due, at), () => this.#arm()) },
      push: this.#pushing,
      scheduleNames: registrySchedules(env.DIRECTORY!, {
        queue: () => this.queue,
        deleteHere: (name) => this.#store.schedules.delete(name),
        deleteAt: (queue, name) => deleteSchedule(env, queue, name),
      }),
    });
    this.#bindings = new Bindings(storage, env.DIRECTORY!, () => this.queue, (queue, ids) => queueStub(env, queue).release(ids, queue));
    void ctx.blockConcurrencyWhile(async () => {
      // An object never written keeps no storage: the first call that runs here builds it (#build).
      if (hasStorage(storage)) {
        await this.#build();
        const [me] = storage.sql.exec("SELECT queue, listed FROM queue_object").toArray() as Row[];
        this.#queue = (me?.queue as string | undefined) ?? null;
        this.#listed = me?.listed === 1;
      }
      this.#alarm = new QueueAlarm(storage, await storage.getAlarm(), this.#retentionMs);
    });
  }

  /** Builds its SQLite from the migrations/ files, once (again after a let-go), with the queue it holds if it knows it. */
  #build(): Promise<void> {
    if (this.#built) return Promise.resolve();
    // One build at a time: calls that arrive while it runs wait for the same one.
    return (this.#building ??= this.#buildNow().finally(() => (this.#building = undefined)));
  }

  async #buildNow(): Promise<void> {
    const applied = await migrate(objectDriver(this.#storage), MIGRATIONS);
    if (applied.includes(MIGRATIONS[0]!.name)) this.#mayBeEmpty = true; // new: the call it is built for may write nothing
    this.#storage.sql.exec(OBJECT_SCHEMA).toArray();
    if (this.#queue !== null) this.#storage.sql.exec("INSERT INTO queue_object (one, queue) VALUES (1, ?1) ON CONFLICT DO NOTHING", this.#queue).toArray();
    this.#built = true;
  }

  /** Runs one call on this object's storage, built first if need be; then, once nothing runs here, lets the storage go if it holds nothing. */
  async #run<T>(call: () => Promise<T>): Promise<T> {
    await this.#build();
    this.#running++;
    try {
      return await call();
    } finally {
      this.#running--;
      await this.#letGoIfEmpty();
    }
  }

  /**
   * An object that holds nothing (no job, history, settings, schedule, push
   * setting or count, no unbind pending: holdsNothing), with no call running
   * and no claim waiting, lets its storage go: it costs nothing to keep. It is
   * first unlisted from the registry (a read of the queue then goes to the
   * object that holds none, as for a queue never used), then its alarm and
   * every row are deleted, with no other call let in meanwhile. The next call
   * that runs here builds the storage again; every fence stays above those
   * before, as the directory's shards keep them. Looked at after a call that
   * built the storage, a delete, an alarm, and once when the object starts.
   * The object that holds none is kept: it answers for every queue never used.
   */
  async #letGoIfEmpty(): Promise<void> {
    if (!this.#mayBeEmpty || this.#running > 0 || this.#room.waiting > 0 || !this.#built || this.#queue === null || this.#queue === NO_QUEUE) return;
    this.#mayBeEmpty = false;
    if (!holdsNothing(this.#storage)) return;
    const queue = this.#queue;
    await this.ctx.blockConcurrencyWhile(async () => {
      try {
        // Unlisted first: should a step below fail, the next write lists it again.
        this.#storage.sql.exec("UPDATE queue_object SET listed = 0").toArray();
        this.#listed = false;
        await registry(this.env.DIRECTORY!).removeQueue(queue);
        await this.#storage.deleteAlarm();
        this.#alarm.rang();
        await this.#storage.deleteAll();
        this.#built = false;
      } catch (error) {
        console.error(`fencelease: queue ${JSON.stringify(queue)}: letting go of its empty storage failed; it is kept`, error);
      }
    });
  }

  /** The queue this object holds. */
  get queue(): string {
    if (this.#queue === null) throw new Error("this queue's object has not been told its queue yet");
    return this.#queue;
  }

  /** How many claims wait here now. */
  get waiting(): number {
    return this.#room.waiting;
  }

  /** Serves the queue's part of the API, for the Worker's router. */
  override async fetch(workerRequest: WorkerRequest): Promise<WorkerResponse> {
    this.#meter.requests++;
    return (await this.#run(() => this.#serve(workerRequest as unknown as Request))) as unknown as WorkerResponse;
  }

  async #serve(request: Request): Promise<Response> {
    this.#adopt(request.headers.get(QUEUE_HEADER));
    const { pathname } = new URL(request.url);
    const removes = request.method === "DELETE" || (request.method === "POST" && pathname === BULK); // a bulk action may delete
    if (removes) this.#mayBeEmpty = true;
    const response = request.method === "POST" && (pathname === "/v1/jobs" || ENQUEUE_MANY.test(pathname)) ? await this.#enqueue(request, pathname) : await this.#app.fetch(request);
    if (request.method !== "GET" && this.#queue !== NO_QUEUE) await this.#afterWrite(removes, pathname, response.ok);
    return response;
  }

  /**
   * Ends expired leases, fires due schedules and purges, wakes the waiters,
   * and arms the next alarm. It does not throw: the runtime retries a failed
   * alarm only six times, then drops it, so a failure is logged and the alarm
   * armed again, no sooner than ALARM_RETRY_MS later (what failed is still due).
   */
  override async alarm(): Promise<void> {
    this.#meter.requests++;
    this.#alarm.rang();
    this.#mayBeEmpty = true; // it may have purged the last of the queue
    await this.#run(() => this.#maintain());
  }

  async #maintain(): Promise<void> {
    let failed = false;
    try {
      const done = await maintain(this.#store, Date.now(), this.#retentionMs, { maxChunks: CRON_MAX_CHUNKS });
      if (didAnything(done)) console.log(`fencelease: queue ${JSON.stringify(this.queue)}: ${maintainedLine(done)}`);
      await wakeAfter(done, this.#waits);
      // A fire's job is bound after it is created (the store creates it), so that a by-id call finds it.
      const elsewhere = await this.#bindings.bindInDirectory(done.fired.map((job) => job.id));
      if (elsewhere.size > 0) console.error(`fencelease: queue ${JSON.stringify(this.queue)}: fired jobs whose id another queue holds: ${JSON.stringify([...elsewhere])}`);
      // A pushed queue's jobs due by now (a backoff, a Retry-After, a delivery whose lease ran out) go out here.
      const maxInFlight = await this.#pushing.maxInFlight(this.queue);
      if (maxInFlight !== null) await pushDue(this.queue, { store: this.#store, clock: Date.now, waits: this.#waits, limit: maxInFlight, log: (line) => console.error(line) });
    } catch (error) {
      failed = true;
      console.error(`fencelease: queue ${JSON.stringify(this.queue)}: the alarm failed; it comes back in ${ALARM_RETRY_MS} ms`, error);
    }
    await this.#flush();
    await this.#alarm.arm(this.queue, Date.now(), this.#bindings.pending(), failed ? Date.now() + ALARM_RETRY_MS : undefined, await this.#pushAt());
  }

  /** release (RPC, from another queue's object) lets go of each of `ids` that has no row here; answers those. `queue` is this object's, which it may not have been told yet. */
  async release(ids: string[], queue: string): Promise<string[]> {
    this.#meter.requests++;
    return this.#run(async () => {
      this.#adopt(encodeURIComponent(queue));
      return this.#bindings.release(ids);
    });
  }

  /** pushStats (RPC, for the router's /metrics) answers this queue's push deliveries by outcome, and its pushed leases current now: none when it was never pushed. */
  async pushStats(): Promise<PushStats[]> {
    this.#meter.requests++;
    return this.#run(() => this.#store.push.stats({ now: Date.now() }));
  }

  /** meter (RPC, for the cost tests and the bench; not counted) answers what this object served, read and wrote since it started (migrations included). */
  async meter(): Promise<Meter> {
    return { ...this.#meter, alarmsSet: this.#alarm.sets };
  }

  /** alarmAt (RPC, for the tests) answers when the alarm is armed, or null. */
  async alarmAt(): Promise<number | null> {
    return this.#storage.getAlarm();
  }

  /** Learns the queue from the Worker's first request and keeps it for the alarm. */
  #adopt(header: string | null): void {
    if (header === null || this.#queue !== null) return;
    this.#queue = decodeURIComponent(header);
    this.#storage.sql.exec("INSERT INTO queue_object (one, queue) VALUES (1, ?1) ON CONFLICT DO NOTHING", this.#queue).toArray();
  }

  /**
   * An enqueue (one job or many): the ids are bound to this queue in the
   * directory, under their locks, before the app creates them; an id another
   * queue holds is not created here (created false, its job read from there).
   * A body the app would refuse goes to it at once: it says why, and nothing
   * is bound.
   */
  async #enqueue(request: Request, pathname: string): Promise<Response> {
    const text = await request.text();
    const again = () => new Request(request, { body: text });
    const one = pathname === "/v1/jobs";
    const parsed = parseJson(text);
    const checked = one ? EnqueueBody.safeParse(parsed) : EnqueueManyBody.safeParse(parsed);
    if (!checked.success) return this.#app.fetch(again());
    const jobs = one ? [checked.data as { id: string; queue?: string }] : (checked.data as { jobs: { id: string }[] }).jobs;
    // The path's queue decoded as the app's router decodes it: a malformed escape (%ZZ) stays as it is, part of the name.
    const queue = one ? ((checked.data as { queue?: string }).queue ?? "default") : tryDecodeURIComponent(ENQUEUE_MANY.exec(pathname)![1]!);
    // A token that may not enqueue there is refused by the app, before any id is bound (an id held elsewhere never reaches the app); the Worker sends such a call to the object that holds none.
    const permit = forwardedPermit(request.headers, (ids) => this.#store.queuesOf(ids));
    if (permit !== null && !permit.may("enqueue", queue)) return this.#app.fetch(again());
    if (queue !== this.#queue) return misrouted(queue, this.#queue);
    const ids = jobs.map((job) => job.id);
    return this.#bindings.hold(ids, async () => {
      const { taken, asked } = await this.#bindings.bind(ids);
      const created = new Set<string>();
      let response: Response;
      if (one) {
        const elsewhere = taken.get(ids[0]!);
        if (elsewhere === undefined) response = await this.#app.fetch(again());
        else if (permit !== null && !permit.sees(elsewhere)) response = errorAnswer(takenUnseen(ids[0]!));
        else response = await existing(this.env, request, ids[0]!, elsewhere);
        if (response.status === 201) created.add(ids[0]!);
      } else {
        response = await this.#enqueueMany(request, parsed as { jobs: { id: string }[] }, taken);
        if (response.ok) for (const job of ((await response.clone().json()) as { jobs: { id: string; created: boolean }[] }).jobs) if (job.created) created.add(job.id);
      }
      this.#bindings.abandon(asked.filter((id) => !created.has(id)));
      return response;
    });
  }

  /** enqueueMany of the jobs whose ids no other queue holds; those that another does answer created false, in their place. */
  async #enqueueMany(request: Request, body: { jobs: { id: string }[] }, taken: Map<string, string>): Promise<Response> {
    const kept = body.jobs.filter((job) => !taken.has(job.id));
    if (kept.length === 0) return Response.json({ jobs: body.jobs.map(({ id }) => ({ id, created: false })) });
    const response = await this.#app.fetch(new Request(request, { body: JSON.stringify({ ...body, jobs: kept }) }));
    if (!response.ok || taken.size === 0) return response;
    const answered = new Map(((await response.json()) as { jobs: { id: string; created: boolean }[] }).jobs.map((job) => [job.id, job]));
    return Response.json({ jobs: body.jobs.map(({ id }) => answered.get(id) ?? { id, created: false }) });
  }

  /** After a write: unbinds what a delete removed, lists this queue once it holds something, and arms the alarm. */
  async #afterWrite(removes: boolean, pathname: string, ok: boolean): Promise<void> {
    if (ok && !this.#listed && !pathname.endsWith("/claim") && !pathname.startsWith("/v1/leases/")) {
      await registry(this.env.DIRECTORY!).addQueue(this.queue);
      this.#storage.sql.exec("UPDATE queue_object SET listed = 1").toArray();
      this.#listed = true;
    }
    // A delete (or a bulk action) may have removed rows; an enqueue may have bound ids it did not create.
    if ((removes || pathname === "/v1/jobs" || ENQUEUE_MANY.test(pathname)) && this.#bindings.pending()) await this.#flush();
    await this.#arm();
  }

  /** Sends pending unbinds; one that fails is left to the alarm (armed for it by #arm). */
  async #flush(): Promise<void> {
    try {
      await this.#bindings.flush();
    } catch (error) {
      console.error(`fencelease: queue ${JSON.stringify(this.queue)}: unbinding removed ids failed; the alarm tries again`, error);
    }
  }

  async #arm(): Promise<void> {
    await this.#alarm.arm(this.queue, Date.now(), this.#bindings.pending(), undefined, await this.#pushAt());
  }

  /** When this queue, if it is pushed, next has a job to push (null: not pushed, or nothing to push before a lease ends). */
  async #pushAt(): Promise<number | null> {
    if (this.#queue === null || this.#queue === NO_QUEUE || (await this.#pushing.maxInFlight(this.#queue)) === null) return null;
    return this.#store.push.nextDueAt(this.#queue, { now: Date.now() });
  }
}

/** Runs `then` once what a write rang (a push's deliveries, in a pushed queue) has ended; answers that. */
function afterPushing(rung: void | Promise<void>, then: () => Promise<void>): void | Promise<void> {
  return rung instanceof Promise ? rung.then(then) : rung;
}

/** The object of `queue`. */
export function queueStub(env: WorkerEnv, queue: string): DurableObjectStub<QueueObject> {
  const namespace = env.QUEUES! as unknown as DurableObjectNamespace<QueueObject>;
  return namespace.get(namespace.idFromName(queue));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Deletes schedule `name` from the object of `queue` (as this object's own call, which may do everything): a schedule moved here from there. */
async function deleteSchedule(env: WorkerEnv, queue: string, name: string): Promise<void> {
  const headers = { [QUEUE_HEADER]: encodeURIComponent(queue) };
  const response = await queueStub(env, queue).fetch(`http://localhost/v1/schedules/${encodeURIComponent(name)}`, { method: "DELETE", headers } as never);
  if (!response.ok && response.status !== 404) throw new Error(`the object of ${JSON.stringify(queue)} answered ${response.status}`);
}

/** An enqueue of an id another queue holds, which the token sees: created false, with the job as that queue has it (read as this object's own call). */
async function existing(env: WorkerEnv, request: Request, id: string, queue: string): Promise<Response> {
  const headers = new Headers(request.headers);
  headers.delete(GRANT_HEADER);
  headers.set(QUEUE_HEADER, encodeURIComponent(queue));
  const read = await queueStub(env, queue).fetch(new URL(`/v1/jobs/${encodeURIComponent(id)}`, request.url).href, { headers } as never);
  // Gone from there since it was found bound there: the enqueue did nothing, and may be sent again.
  if (read.status === 404) return unavailable(`job ${JSON.stringify(id)} was leaving queue ${JSON.stringify(queue)} while it was enqueued; nothing was written, send the enqueue again`);
  if (!read.ok) return read as unknown as Response;
  return Response.json({ created: false, job: await read.json() }, { status: 200 });
}

/** A 503 as the app answers one, with nothing applied. */
function unavailable(message: string): Response {
  return Response.json({ error: { code: "unavailable", message, details: { outcome: "not_applied", reason: "busy" } } }, { status: 503, headers: { "Retry-After": "1" } });
}

/** The Worker sent a write to the wrong object: a bug, refused before anything is written. */
function misrouted(queue: string, mine: string | null): Response {
  console.error(`fencelease: an enqueue into queue ${JSON.stringify(queue)} reached the object of ${JSON.stringify(mine)}`);
  return Response.json({ error: { code: "internal_error", message: "internal error" } }, { status: 500 });
}
