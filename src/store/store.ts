import type { Driver, Row, Statement } from "../drivers/driver.ts";
import { traced } from "../drivers/traced.ts";
import { NotClaimable, NotFound, WrongStatus } from "./errors.ts";
import { eventFromRow, type Job, type JobEvent, jobFromRow, type JobStatus, type Lease, leasesOf, type Step, stepFromRow } from "./job.ts";
import { PushEndpoints } from "./push.ts";
import { claimRefusal, leaseLostReason, type LeaseOutcome, outcomes, refusal, stepRefusal } from "./refusal.ts";
import { Schedules } from "./schedules.ts";
import { Queues } from "./queues.ts";
import { queueScope, Tokens } from "./tokens.ts";
import { type QueueStats, queueStats } from "./stats.ts";
import * as sql from "./sql/lease.ts";
import { followClock } from "./sql/bucket.ts";
import { followKeyClocks } from "./sql/keys.ts";
import * as claims from "./sql/claim-next.ts";
import * as housekeeping from "./sql/housekeeping.ts";
import * as reads from "./sql/reads.ts";
import * as sqlMany from "./sql/many.ts";
import { readStep } from "./sql/steps.ts";
import { checked } from "./checked.ts";
import { inChunks } from "./in-chunks.ts";
import { bulk, searchPage } from "./search.ts";
import { type Health, type HealthOptions, WriteHealth } from "./health.ts";
import { clockId } from "./step-back.ts";
import * as check from "./validate.ts";
import {
  type CancelRequest,
  type ClaimedLeases,
  type ClaimNextRequest,
  type ClaimRequest,
  type CompleteManyRequest,
  type CompleteRequest,
  type EnqueueManyRequest,
  type EnqueueRequest,
  type Enqueued,
  type EnqueuedOfMany,
  type PlainEnqueueRequest,
  type EventsRequest,
  type ExpireRequest,
  type FailRequest,
  type HeldLease,
  type LeaseCheck,
  type BulkOutcome,
  type BulkRequest,
  type ListRequest,
  type NextClaim,
  type Page,
  type PurgeRequest,
  type RenewManyRequest,
  type RenewRequest,
  type Settled,
  type StepRequest,
  timeOf,
} from "./shapes.ts";

export type * from "./shapes.ts";
export { HOUSEKEEPING_CHUNK, MAX_BURST, MAX_RATE_PER_SECOND } from "./shapes.ts";

/** A token's queues as the reads take them (JSON), checked; null for every queue. */
function scopeOf(queues: readonly string[] | undefined): string | null {
  const checked = queues === undefined ? ["*"] : queueScope(queues);
  return checked.includes("*") ? null : JSON.stringify(checked);
}

/**
 * The statements of a claim-next of up to `limit` jobs of `queue` at `now`
 * read from `clock`, its arguments checked; the rules are those of
 * src/store/sql/claim-next.ts.
 */
function takeNext(queue: string, owner: string, now: number, ttlMs: number, limit: number, clock: string): Statement[] {
  return claims.claimNext(check.name("queue", queue), check.claimant("owner", owner), check.instant("now", now), check.positiveInt("ttlMs", ttlMs), check.positiveInt("limit", limit), clock);
}

/** Claimed leases, with the `retryAfterMs` of a row of `retryAfter` if there is one. */
function withRetryAfter(leases: ClaimedLeases, hint: Row | undefined): ClaimedLeases {
  if (hint !== undefined) leases.retryAfterMs = hint.ms as number;
  return leases;
}

/** The lease that a claim's row (the job as it now holds it) stands for. */
function leaseOf(row: Row): Lease {
  const job = jobFromRow(row);
  return { job, fence: job.fence, until: job.until };
}

/**
 * The lease store: the verbs of the fencing contract over a Driver.
 *
 * Each verb takes the id (or queue) and one request shaped like the body of
 * its HTTP route, with an optional `now` (ms since the epoch; default
 * `Date.now()`), and answers the job, the lease, or what changed; a refusal is
 * the domain error that says why (NotFound, NotClaimable, LeaseLost,
 * WrongStatus), a bad argument InvalidArgument before the database is
 * touched, and a database that cannot serve the call StorageUnavailable.
 * Every rule is decided by one SQL statement; an accepted write answers from
 * what that statement returned, and only a write that changed nothing reads
 * the job, after it, to say why. The design note's eight operations, with
 * their own answers, are `noteVerbs(store)` (src/store/note.ts).
 */
export class LeaseStore {
  readonly #driver: Driver;
  readonly #random: () => number;
  readonly #health: WriteHealth;
  /** The queues' settings (src/store/queues.ts): pause, resume, set, get, list. */
  readonly queues: Queues;
  /** The recurring schedules (src/store/schedules.ts): put, get, list, delete, fireDue. */
  readonly schedules: Schedules;
  /** The queues' push endpoints (src/store/push.ts): put, rotate, get, list, delete, and the claim and record of push delivery. */
  readonly push: PushEndpoints;
  /** The API tokens (src/store/tokens.ts): create, list, find, revoke. */
  readonly tokens: Tokens;
  /** This store's clock id: which clock wrote a stored time (src/store/step-back.ts). */
  readonly #clock = clockId();

  /** `random` draws the backoff jitter; tests fix it. `health`: how `health()` decides (see WriteHealth), and where it logs. */
  constructor(driver: Driver, options: { random?: (() => number) | undefined; health?: HealthOptions | undefined } = {}) {
    this.#health = new WriteHealth(options.health);
    this.#driver = traced(this.#health.watch(driver));
    this.#random = options.random ?? Math.random;
    this.queues = new Queues(this.#driver, this.#clock);
    this.schedules = new Schedules(this.#driver, this.#clock);
    this.push = new PushEndpoints(this.#driver, this.#clock);
    this.tokens = new Tokens(this.#driver);
  }

  /**
   * enqueue adds a job and answers it, `created: true`; an id that exists
   * answers its job as stored, untouched, `created: false`. With a dedup key
   * (docs/queues.md#once-per-key): inside the key's window it creates nothing
   * and answers the key's job (`deduplicated`; its `id` alone once purged); a
   * debounce moves the key's job that waits (`debounced`); a supersede names
   * the job it cancelled (`superseded`, or null).
   */
  enqueue(id: string, request?: PlainEnqueueRequest): Promise<{ created: boolean; job: Job }>;
  enqueue(id: string, request: EnqueueRequest): Promise<Enqueued>;
  async enqueue(id: string, request: EnqueueRequest = {}): Promise<Enqueued | { created: boolean; job: Job }> {
    const now = timeOf(request);
    for (;;) {
      const plan = checked.enqueue(id, request, now);
      const answers = await this.#driver.batch(plan.statements);
      const [row] = answers[plan.inserted]!;
      if (row !== undefined) {
        const job = jobFromRow(row);
        return plan.superseded === undefined ? { created: true, job } : { created: true, job, superseded: (answers[plan.superseded]![0]?.id as string | undefined) ?? null };
      }
      const [moved] = plan.debounced === undefined ? [] : answers[plan.debounced]!;
      if (moved !== undefined) return { created: false, debounced: true, job: jobFromRow(moved) };
      const [held] = plan.holder === undefined ? [] : answers[plan.holder]!;
      if (held !== undefined && held.id_taken === 0 && (held.window_until as number | null) !== null && (held.window_until as number) > now) {
        return held.id === null ? { created: false, deduplicated: true, id: held.holder as string } : { created: false, deduplicated: true, job: jobFromRow(held) };
      }
      const job = await this.#read(id, now);
      if (job !== null) return { created: false, job };
      // Deleted between the two: the id is free again, so the enqueue is asked again.
    }
  }

  /**
   * enqueueMany adds jobs to a queue in one transaction and answers, in order,
   * whether each was created; an id that exists (or came earlier in the same
   * call) is `created: false` and untouched. A job whose dedup key's window
   * lasts, or that came after another of its key in the call, is
   * `deduplicated` and names the job that holds the key (`duplicateOf`).
   */
  async enqueueMany(queue: string, request: EnqueueManyRequest): Promise<EnqueuedOfMany[]> {
    const { jobs } = request;
    const [insertedRows, , holders] = await this.#driver.batch(checked.enqueueMany(queue, jobs, timeOf(request)));
    const inserted = new Set(insertedRows!.map((row) => row.id as string));
    const holderOf = new Map((holders ?? []).filter((row) => row.dedup_key !== null).map((row) => [row.dedup_key as string, row.job_id as string]));
    const existing = new Set((holders ?? []).filter((row) => row.dedup_key === null).map((row) => row.job_id as string));
    return jobs.map(({ id, dedupKey }) => {
      const created = inserted.delete(id); // a repeated id was created by its first entry only
      const holder = dedupKey === undefined || dedupKey === null ? undefined : holderOf.get(dedupKey);
      if (created || holder === undefined || existing.has(id)) return { id, created };
      return { id, created, deduplicated: true, duplicateOf: holder };
    });
  }

  /** get answers the job as stored, with its status at `now`; NotFound if there is none. */
  async get(id: string, request: { now?: number | undefined } = {}): Promise<Job> {
    const job = await this.#read(check.name("id", id), check.instant("now", timeOf(request)));
    if (job === null) throw new NotFound(id);
    return job;
  }

  /**
   * claim takes the lease of a job that nobody holds and answers it: the new
   * fence, its end, and the job as now held. NotFound, or NotClaimable with
   * why: another lease holds it, it is done, dead or cancelled, or its queue
   * is paused, at its maxLeased, or out of tokens.
   */
  async claim(id: string, request: ClaimRequest): Promise<Lease> {
    const now = timeOf(request);
    const [row] = (await this.#driver.batch(checked.claim(id, request, now, this.#clock)))[1]!;
    if (row !== undefined) return leaseOf(row);
    const [read] = await this.#driver.run(claims.claimState(id, now));
    const refused = claimRefusal(id, read);
    if (refused instanceof NotClaimable && (refused.reason === "rate_limited" || refused.reason === "key_rate_limited")) await this.#followClock(read!.queue as string, now);
    throw refused;
  }

  /**
   * claimNext takes up to `limit` (default 1) due jobs of a queue, in claim
   * order (src/store/sql/claim-next.ts); none due gives []. Short because of
   * the queue's rate limit, its answer also says in how many ms the next token
   * is due (`retryAfterMs`).
   *
   * Where a batch costs one round trip (a remote driver), that hint is read in
   * the claim's batch; on a local file, where it would make every claim a
   * transaction, only after a claim that came back short, on its own: a hint
   * of when to ask again, never a decision.
   */
  async claimNext(queue: string, request: ClaimNextRequest): Promise<ClaimedLeases> {
    const now = timeOf(request);
    const limit = request.limit ?? 1;
    const take = takeNext(queue, request.owner, now, request.ttlMs, limit, this.#clock);
    if (this.#driver.remote) {
      const [rows, hints] = await this.#driver.batch([...take, claims.retryAfter(queue, now, this.#clock, limit)]);
      return withRetryAfter(leasesOf(rows!), await this.#followed(queue, now, hints![0]));
    }
    const leases = leasesOf((await this.#driver.batch(take))[0]!);
    return leases.length < limit ? withRetryAfter(leases, await this.#followed(queue, now, (await this.#driver.run(claims.retryAfter(queue, now, this.#clock)))[0])) : leases;
  }

  /** nextClaimableAt answers when a job of `queue` next becomes claimable by claimNext (maybe already), or null if none will. */
  async nextClaimableAt(queue: string, request: { now?: number | undefined } = {}): Promise<number | null> {
    const [row] = await this.#driver.run(claims.nextClaimable([check.name("queue", queue)], check.instant("now", timeOf(request)), this.#clock));
    return (row?.at as number | null | undefined) ?? null;
  }

  /** nextClaimableAtEach is nextClaimableAt of many queues in one read (the wait rooms' re-check): those that have a time, with it. */
  async nextClaimableAtEach(queues: string[], request: { now?: number | undefined } = {}): Promise<{ queue: string; at: number }[]> {
    const rows = await this.#driver.run(claims.nextClaimable(queues.map((queue) => check.name("queue", queue)), check.instant("now", timeOf(request)), this.#clock));
    return rows.filter((row) => row.at !== null).map((row) => ({ queue: row.queue as string, at: row.at as number }));
  }

  /** finishedOf answers which of the jobs `ids` are done, dead, cancelled or gone, in one read (the wait rooms' re-check). */
  async finishedOf(ids: string[]): Promise<string[]> {
    return (await this.#driver.run(reads.finished(ids.map((id) => check.name("id", id))))).map((row) => row.id as string);
  }

  /** queuesOf answers the queue of each of the jobs `ids` that exists, in one read (what a token limited to some queues must know first); an id of no job is not in it. */
  async queuesOf(ids: string[]): Promise<Map<string, string>> {
    const rows = await this.#driver.run(reads.queuesOf(ids.map((id) => check.name("id", id))));
    return new Map(rows.map((row) => [row.id as string, row.queue as string]));
  }

  /**
   * dataVersion answers a number that changes when another connection (another
   * process, plain SQL) commits to the database, and only then: SQLite's
   * data_version, read on the store's connection, which its own writes leave
   * as it is. Null where it cannot tell: a remote database, where each call
   * may be served by another connection. The wait rooms skip their re-check
   * while it stays the same.
   */
  async dataVersion(): Promise<number | null> {
    if (this.#driver.remote) return null;
    const [row] = await this.#driver.run({ sql: "SELECT data_version AS version FROM pragma_data_version()", args: [] });
    return row!.version as number;
  }

  /**
   * renew extends the current lease to `now + ttlMs`, and stores `progress` (any
   * JSON value of at most 4 KB) on the job if given; answers the new `until`.
   * NotFound, or LeaseLost (reason cancelled once the job is), and nothing stored,
   * if the lease is not current.
   */
  async renew(id: string, request: RenewRequest): Promise<{ until: number }> {
    const now = timeOf(request);
    const [row] = (await this.#driver.batch(checked.renew(id, request, now)))[0]!;
    if (row !== undefined) return { until: row.until as number };
    throw refusal(id, await this.#read(id, now), request.owner, request.fence);
  }

  /**
   * complete stores the result of the current lease and answers the done job;
   * NotFound, or LeaseLost, and the stored result stays, if it is not current.
   * The same completion sent again (same owner, fence and result) answers the
   * job again, `changed: false`, so a retry after a lost response is not a
   * failure. With `next`, the same transaction also leases the next due jobs
   * of the job's queue to the same owner; a refused complete takes nothing.
   */
  async complete(id: string, request: CompleteRequest): Promise<Settled> {
    const now = timeOf(request);
    const { owner, fence, result } = request;
    const take = request.next && claims.claimNextAfterCompletion(id, owner, now, this.#take(owner, request.next));
    const results = await this.#driver.batch(checked.complete(id, request, now, take));
    const [written] = results[0]!;
    const leases = take ? leasesOf(results[2]!) : [];
    if (written !== undefined) return { job: jobFromRow(written), leases, changed: true };
    const current = await this.#read(id, now);
    // Done by this very owner, fence and result: an earlier call wrote it, and its answer was lost.
    if (current?.done && current.owner === owner && current.fence === fence && current.result === result) return { job: current, leases, changed: false };
    throw refusal(id, current, owner, fence);
  }

  /**
   * fail ends the current lease as a failed attempt and answers the job: due
   * again after `retryInMs` or the backoff, or dead if that was its last
   * attempt. NotFound, or LeaseLost if the lease is not current; `next` as in complete.
   */
  async fail(id: string, request: FailRequest): Promise<Settled> {
    const now = timeOf(request);
    const { written, leases } = await this.#settle(checked.fail(id, request, now, this.#jitter()), id, request.owner, now, request.next);
    if (written !== undefined) return { job: written, leases, changed: true };
    throw refusal(id, await this.#read(id, now), request.owner, request.fence);
  }

  /**
   * step records the result of step `name` of job `id` (any JSON value, null
   * included) under the current lease, and answers it, `recorded: true`. To
   * the current lease, a step of that name recorded already (by any lease)
   * answers as stored, `recorded: false`. NotFound, or LeaseLost, and nothing
   * stored, if the lease is not current; StepLimit, and nothing stored, past
   * the job's 64 steps or 65,536 bytes of results as JSON.
   */
  async step(id: string, name: string, request: StepRequest): Promise<{ recorded: boolean; step: Step }> {
    const now = timeOf(request);
    const statements = checked.step(id, name, request, now);
    const [row] = (await this.#driver.batch(statements))[1]!;
    if (row !== undefined) return { recorded: true, step: stepFromRow(row) };
    const [read] = await this.#driver.run(readStep(id, name, now));
    const bytes = statements[0]!.args[6] as number; // ?7 of recordStep: the bytes of its result
    const refused = stepRefusal(id, read, request.owner, request.fence, bytes);
    if (refused !== null) throw refused;
    return { recorded: false, step: stepFromRow(JSON.parse(read!.step as string) as Row) };
  }

  /** release gives back a lease that is held and not done, keeping its fence, and answers the job; NotFound, or LeaseLost otherwise. */
  async release(id: string, request: HeldLease): Promise<Job> {
    const now = timeOf(request);
    const [row] = (await this.#driver.batch(checked.release(id, request, now)))[0]!;
    if (row !== undefined) return jobFromRow(row);
    throw refusal(id, await this.#read(id, now), request.owner, request.fence);
  }

  /**
   * renewMany extends each presented lease that is current to `now + ttlMs`,
   * and stores the `progress` it carries, if any, each decided alone; answers,
   * in order, each one's new `until` or why it was refused (LeaseLost, NotFound).
   * An id given twice is InvalidArgument, and nothing changes.
   */
  async renewMany(request: RenewManyRequest): Promise<LeaseOutcome<{ until: number }>[]> {
    const { owner, leases } = request;
    const held = leases.map(({ id, fence, progress }, i): sqlMany.HeldLease => [check.name("id", id), check.positiveInt("fence", fence), check.progress(`leases[${i}].progress`, progress)]);
    check.distinctIds("leases", leases);
    const [renewed, refused] = await this.#driver.batch(sqlMany.renewMany(check.name("owner", owner), held, check.instant("now", timeOf(request)), check.positiveInt("ttlMs", request.ttlMs)));
    const until = new Map(renewed!.map((row) => [row.id as string, row.until as number]));
    return outcomes(leases, owner, refused!, (id) => ({ until: until.get(id)! }));
  }

  /**
   * completeMany stores each presented lease's result, as complete does one,
   * each decided alone; with `next`, the same transaction leases up to
   * `next.limit` due jobs of `next.queue` to the same owner, whatever the
   * completions' outcomes. Answers each completion's outcome, in order, the
   * leases taken, and the queues whose leases it ended (`ended`, each once).
   */
  async completeMany(request: CompleteManyRequest): Promise<{ completed: LeaseOutcome<{ done: true }>[]; leases: Lease[]; ended: string[] }> {
    const { owner, leases: completions, next } = request;
    const now = timeOf(request);
    const presented = completions.map(({ id, fence, result }, i): sqlMany.Completion => [check.name("id", id), check.positiveInt("fence", fence), check.result(`leases[${i}].result`, result)]);
    check.distinctIds("leases", completions);
    const statements = sqlMany.completeMany(check.name("owner", owner), presented, check.instant("now", now));
    const take = next === undefined ? [] : takeNext(next.queue, owner, now, next.ttlMs, next.limit, this.#clock);
    const [, done, refused, , taken = []] = await this.#driver.batch([...statements, ...take]);
    const ended = [...new Set(done!.map((row) => row.queue as string))];
    return { completed: outcomes(completions, owner, refused!, () => ({ done: true as const })), leases: leasesOf(taken), ended };
  }

  /** retry puts a dead job back in its queue with its attempts reset and answers it; NotFound, or WrongStatus if it is not dead. */
  async retry(id: string, request: { now?: number | undefined } = {}): Promise<Job> {
    const now = timeOf(request);
    const [row] = (await this.#driver.batch(housekeeping.retry(check.name("id", id), check.instant("now", now))))[0]!;
    if (row !== undefined) return jobFromRow(row);
    const current = await this.#read(id, now);
    if (current === null) throw new NotFound(id);
    throw new WrongStatus(id, current.status, `only a dead job can be retried; job ${JSON.stringify(id)} is ${current.status}`);
  }

  /**
   * cancel cancels a job that is not finished (queued, scheduled, leased, or
   * its lease expired): it becomes final, its owner and fence kept, and its
   * holder's next renew, complete, fail or release is LeaseLost with reason
   * cancelled. `by` (default "api") and `reason` are recorded. Answers the job
   * and whether this call cancelled it (false: it already was, and nothing
   * changed); NotFound, or WrongStatus for a job done or dead, which is left as it is.
   */
  async cancel(id: string, request: CancelRequest = {}): Promise<{ changed: boolean; job: Job }> {
    const now = timeOf(request);
    const [row] = (await this.#driver.batch(checked.cancel(id, request, now)))[0]!;
    if (row !== undefined) return { changed: true, job: jobFromRow(row) };
    const current = await this.#read(id, now);
    if (current === null) throw new NotFound(id);
    if (current.status !== "cancelled") {
      throw new WrongStatus(id, current.status, `only a queued, scheduled or leased job can be cancelled; job ${JSON.stringify(id)} is ${current.status}`);
    }
    return { changed: false, job: current };
  }

  /** delete deletes a job nobody holds a current lease on; NotFound, or WrongStatus while it is leased. */
  async delete(id: string, request: { now?: number | undefined } = {}): Promise<void> {
    const now = timeOf(request);
    const [, deleted] = await this.#driver.batch(housekeeping.remove(check.name("id", id), check.instant("now", now)));
    if (deleted!.length === 1) return;
    if ((await this.#read(id, now)) === null) throw new NotFound(id);
    throw new WrongStatus(id, "leased", `job ${JSON.stringify(id)} is leased; it can be deleted once its lease ends`);
  }

  /**
   * leaseCheck tells a system outside whether (owner, fence) is the current
   * lease of a job and, when it is not, why: the reason a write with it would
   * be refused for. NotFound for an unknown id.
   */
  async leaseCheck(id: string, request: HeldLease): Promise<LeaseCheck> {
    const { owner, fence } = request;
    const statement = reads.leaseCheck(check.name("id", id), check.name("owner", owner), check.positiveInt("fence", fence), check.instant("now", timeOf(request)));
    const [row] = await this.#driver.run(statement);
    if (row === undefined) throw new NotFound(id);
    const answer = { current: row.current === 1, fence: row.fence as number, until: row.until as number };
    if (answer.current) return answer;
    const reason = leaseLostReason({ owner: row.owner as string | null, fence: answer.fence, status: row.status as JobStatus }, owner, fence);
    return row.superseded_by === null ? { ...answer, reason } : { ...answer, reason, supersededBy: row.superseded_by as string };
  }

  /**
   * list pages through the jobs that match a filter (JobFilter: every filter
   * given holds), in id order, among a token's `queues` (only their jobs are
   * read, so the next cursor is one of them); stable while jobs change. A
   * page looks at SEARCH_SCAN jobs at most: one that stopped there short of
   * its `limit` answers the matches so far, maybe none, and the last id it
   * looked at as its cursor (src/store/search.ts).
   */
  async list(request: ListRequest = {}): Promise<Page<Job>> {
    const { cursor, limit, queues, now, scan, ...filter } = request;
    return searchPage(this.#driver, filter, { cursor: cursor ?? null, limit: limit ?? 50, now: timeOf({ now }), scope: scopeOf(queues), scan });
  }

  /**
   * bulk retries (dead and cancelled jobs), cancels (queued, scheduled and
   * leased ones: their holders are refused from then on, reason cancelled) or
   * deletes (finished ones) up to `limit` jobs that match its filter, from its
   * cursor on, in chunks of one transaction each; each job decided by the
   * action's own statement, as the single verbs decide one. Answers how many
   * matched, the jobs changed, those left by reason, and the next cursor
   * (null once the filter's range is done). `dryRun` counts and changes nothing.
   */
  async bulk(request: BulkRequest): Promise<BulkOutcome> {
    return bulk(this.#driver, request, timeOf(request), scopeOf(request.queues));
  }

  /** events pages through a job's history, oldest first, optionally only its events in a token's `queues`; the cursor is the last sequence number seen. */
  async events(id: string, request: EventsRequest = {}): Promise<Page<JobEvent>> {
    const limit = check.positiveInt("limit", request.limit ?? 100);
    const after = request.cursor === undefined ? 0 : check.instant("cursor", Number(request.cursor));
    const rows = await this.#driver.run(reads.events(check.name("id", id), after, limit + 1, scopeOf(request.queues)));
    const items = rows.slice(0, limit).map(eventFromRow);
    return { items, next: rows.length > limit ? String(items.at(-1)!.seq) : null };
  }

  /**
   * stats answers, per queue, the jobs by status at `now`, the oldest due job's
   * age, refused stale writes, and its top keys; one read, which never waits
   * for the write lock.
   */
  async stats(request: { now?: number | undefined } = {}): Promise<QueueStats[]> {
    const now = check.instant("now", timeOf(request));
    return queueStats(await this.#driver.run(reads.stats(now)), now);
  }

  /**
   * expire ends every expired lease (the job dies if that was its last
   * attempt), in chunks (see HousekeepingOptions); answers each job whose
   * lease it ended, with its queue and whether it died.
   */
  async expire(request: ExpireRequest = {}): Promise<{ id: string; queue: string; dead: boolean }[]> {
    const now = check.instant("now", timeOf(request));
    const ended: { id: string; queue: string; dead: boolean }[] = [];
    await inChunks(request, async (size) => {
      const [rows] = await this.#driver.batch([housekeeping.expireSome(now, size)]);
      for (const row of rows!) ended.push({ id: row.id as string, queue: row.queue as string, dead: row.dead === 1 });
      return rows!.length === size;
    });
    return ended;
  }

  /**
   * purge deletes done, dead and cancelled jobs last changed at least `retentionMs`
   * before `now`, with their events, and the history of jobs deleted that long
   * ago, in chunks (see HousekeepingOptions); answers how many jobs.
   */
  async purge(request: PurgeRequest): Promise<number> {
    const now = check.instant("now", timeOf(request));
    const cutoff = now - check.positiveInt("retentionMs", request.retentionMs);
    let purged = 0;
    await inChunks(request, async (size) => {
      const [, , jobs, events, windows] = await this.#driver.batch(housekeeping.purge(cutoff, size, now));
      purged += jobs!.length;
      return jobs!.length === size || events!.filter((event) => event.kind === "deleted").length === size || windows!.length === size;
    });
    return purged;
  }

  /**
   * health answers whether writes can succeed now: not while the database
   * is corrupt, a write is stuck, or a write just failed because the
   * database could not serve it; otherwise as a probe write that changes
   * nothing answers (see WriteHealth).
   */
  health(): Promise<Health> {
    return this.#health.check(this.#driver);
  }

  /** ping answers when the database does; it throws when the database cannot be reached. */
  async ping(): Promise<void> {
    await this.#driver.run({ sql: "SELECT 1", args: [] });
  }

  /** close gives back the database connection. */
  close(): void {
    this.#driver.close();
  }

  /** The backoff's jitter: a factor in [0.5, 1), so that failed jobs do not all come back at once. */
  #jitter(): number {
    return 0.5 + this.#random() / 2;
  }

  /**
   * After a claim of `queue` that its bucket refused at `now`: a bucket whose
   * count is followed back to this store's clock counts on from `now` (see
   * `followClock`, which decides). Without this, with no whole token left,
   * nothing would move its count until the clock came back to it.
   */
  async #followClock(queue: string, now: number): Promise<void> {
    await this.#driver.batch([followClock(queue, now, this.#clock), followKeyClocks(queue, now, this.#clock)]);
  }

  /** The hint of a claim-next stopped short, after following a clock that stepped back if the hint says it did. */
  async #followed(queue: string, now: number, hint: Row | undefined): Promise<Row | undefined> {
    if (hint?.stepped_back === 1) await this.#followClock(queue, now);
    return hint;
  }

  /** The job as it is now, with its status at `now`, or null: what explains a write that changed nothing. */
  async #read(id: string, now: number): Promise<Job | null> {
    const [row] = await this.#driver.run(sql.state(id, now));
    return row ? jobFromRow(row) : null;
  }

  /** What `next` asks of `owner`, checked, with this store's clock: up to `limit` due jobs of the same queue, each leased for `ttlMs`. */
  #take(owner: string, next: NextClaim): NextClaim & { clock: string } {
    check.claimant("owner", owner);
    return { limit: check.positiveInt("limit", next.limit), ttlMs: check.positiveInt("ttlMs", next.ttlMs), clock: this.#clock };
  }

  /**
   * Runs the batch of a verb that ends a lease, then the claim of `next` if
   * asked, in one transaction; answers the job as its write left it, if it
   * wrote, and the leases taken. A job failed and due at once may be among
   * them: then it is answered as that claim left it, leased again.
   */
  async #settle(statements: Statement[], id: string, owner: string, now: number, next: NextClaim | undefined): Promise<{ written: Job | undefined; leases: Lease[] }> {
    const take = next === undefined ? [] : [claims.claimNextAfter(id, owner, now, this.#take(owner, next))];
    const results = await this.#driver.batch([...statements, ...take]);
    const [row] = results[0]!;
    const leases = next === undefined ? [] : leasesOf(results.at(-1)!);
    return { written: row === undefined ? undefined : (leases.find((lease) => lease.job.id === id)?.job ?? jobFromRow(row)), leases };
  }
}
