import type { Driver, Row, Statement } from "../drivers/driver.ts";
import { traced } from "../drivers/traced.ts";
import { type LeaseLostReason, NotClaimable, NotFound, WrongStatus } from "./errors.ts";
import { eventFromRow, type Job, type JobEvent, jobFromRow, type JobStatus, type Lease, leasesOf } from "./job.ts";
import { leaseLostReason, type LeaseOutcome, outcomes, refusal } from "./refusal.ts";
import { Schedules } from "./schedules.ts";
import { type QueueStats, queueStats } from "./stats.ts";
import * as sql from "./sql/lease.ts";
import * as housekeeping from "./sql/housekeeping.ts";
import * as reads from "./sql/reads.ts";
import * as sqlMany from "./sql/many.ts";
import { QueueVerbs, whyNotClaimable } from "./queues.ts";
import { checked } from "./checked.ts";
import { inChunks } from "./in-chunks.ts";
import { type Health, type HealthOptions, WriteHealth } from "./health.ts";
import * as check from "./validate.ts";
import { type ClaimedLeases, type EnqueueOptions, type HousekeepingOptions, type NewJob, type NextClaim, type Page, type QueueLimits, type QueueSettings, type Settled } from "./shapes.ts";

export { type ClaimedLeases, type EnqueueOptions, HOUSEKEEPING_CHUNK, type HousekeepingOptions, MAX_BURST, MAX_RATE_PER_SECOND, type NewJob, type NextClaim, type Page, type QueueLimits, type QueueSettings, type Settled } from "./shapes.ts";

/**
 * The lease store: the verbs of the fencing contract over a Driver.
 *
 * The design note's verbs (`enqueue`, `claim`, `renew`, `complete`, `release`)
 * and `fail` answer true/false or null. Their `...Job`/`...Lease` twins run the
 * same batch with a read of the job at its end, so they answer the job, or
 * throw a domain error that says why the write was refused.
 */
export class LeaseStore {
  readonly #driver: Driver;
  readonly #random: () => number;
  readonly #health: WriteHealth;
  /** The recurring schedules (src/store/schedules.ts): put, get, list, delete, fireDue. */
  readonly schedules: Schedules;
  readonly #queues: QueueVerbs;

  /** `random` draws the backoff jitter; tests fix it. `health`: how `health()` decides (see WriteHealth), and where it logs. */
  constructor(driver: Driver, options: { random?: () => number; health?: HealthOptions } = {}) {
    this.#health = new WriteHealth(options.health);
    this.#driver = traced(this.#health.watch(driver));
    this.#random = options.random ?? Math.random;
    this.schedules = new Schedules(this.#driver);
    this.#queues = new QueueVerbs(this.#driver);
  }

  /** enqueue adds a job and answers true, or answers false and changes nothing if the id exists. */
  async enqueue(id: string, options: EnqueueOptions = {}): Promise<boolean> {
    return (await this.#write(checked.enqueue(id, options))) !== undefined;
  }

  /** state reads the job as stored, with its status at `now`, or null if there is none. */
  async state(id: string, now = Date.now()): Promise<Job | null> {
    const [row] = await this.#driver.run(sql.state(check.name("id", id), check.instant("now", now)));
    return row ? jobFromRow(row) : null;
  }

  /** claim takes the lease of a job that nobody holds and answers its new fence, else null. */
  async claim(id: string, owner: string, now: number, ttlMs: number): Promise<number | null> {
    const written = await this.#write(checked.claim(id, owner, now, ttlMs), 1);
    return written ? (written.fence as number) : null;
  }

  /**
   * claimNext takes up to `limit` due jobs of a queue, in claim order; none
   * due gives []. Short because of the queue's rate limit, its answer also
   * says in how many ms the next token is due (`retryAfterMs`).
   */
  async claimNext(queue: string, owner: string, now: number, ttlMs: number, limit = 1): Promise<ClaimedLeases> {
    return this.#queues.claimNext(checked.claimNext(queue, owner, now, ttlMs, limit), queue, now, limit);
  }

  /** nextClaimableAt answers when a job of `queue` next becomes claimable by claimNext (maybe already), or null if none will. */
  async nextClaimableAt(queue: string, now = Date.now()): Promise<number | null> {
    const [row] = await this.#driver.run(reads.nextClaimable([check.name("queue", queue)], check.instant("now", now)));
    return (row?.at as number | null | undefined) ?? null;
  }

  /** nextClaimableAtEach is nextClaimableAt of many queues in one read (the wait rooms' re-check): those that have a time, with it. */
  async nextClaimableAtEach(queues: string[], now = Date.now()): Promise<{ queue: string; at: number }[]> {
    const rows = await this.#driver.run(reads.nextClaimable(queues.map((queue) => check.name("queue", queue)), check.instant("now", now)));
    return rows.filter((row) => row.at !== null).map((row) => ({ queue: row.queue as string, at: row.at as number }));
  }

  /** finishedOf answers which of the jobs `ids` are done, dead, cancelled or gone, in one read (the wait rooms' re-check). */
  async finishedOf(ids: string[]): Promise<string[]> {
    return (await this.#driver.run(reads.finished(ids.map((id) => check.name("id", id))))).map((row) => row.id as string);
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
   * JSON value of at most 4 KB) on the job if given; false, and nothing stored,
   * if the lease is not current.
   */
  async renew(id: string, owner: string, fence: number, now: number, ttlMs: number, options: { progress?: unknown } = {}): Promise<boolean> {
    return (await this.#write(checked.renew(id, owner, fence, now, ttlMs, options.progress))) !== undefined;
  }

  /** complete stores the result of the current lease; false, and the stored result stays, if it is not current. */
  async complete(id: string, owner: string, fence: number, now: number, result: string): Promise<boolean> {
    return (await this.#write(checked.complete(id, owner, fence, now, result))) !== undefined;
  }

  /** release gives back a lease that is held and not done, keeping its fence; false otherwise. */
  async release(id: string, owner: string, fence: number, now = Date.now()): Promise<boolean> {
    return (await this.#write(checked.release(id, owner, fence, now))) !== undefined;
  }

  /**
   * fail ends the current lease as a failed attempt: the job is due again after
   * `retryInMs` or the backoff, or dead if that was its last attempt; false if
   * the lease is not current.
   */
  async fail(id: string, owner: string, fence: number, now: number, error: string, retryInMs?: number): Promise<boolean> {
    return (await this.#write(checked.fail(id, owner, fence, now, error, retryInMs, this.#jitter()))) !== undefined;
  }

  /** enqueueJob is enqueue that answers the job as stored, new or not. */
  async enqueueJob(id: string, options: EnqueueOptions = {}): Promise<{ created: boolean; job: Job }> {
    const now = options.now ?? Date.now();
    const { written, current } = await this.#decide(checked.enqueue(id, { ...options, now }), id, now);
    return { created: written !== undefined, job: current! };
  }

  /**
   * enqueueMany adds jobs to a queue in one transaction and answers, in order,
   * whether each was created; an id that exists (or came earlier in the same
   * call) is `created: false` and untouched.
   */
  async enqueueMany(queue: string, jobs: NewJob[], now: number): Promise<{ id: string; created: boolean }[]> {
    const inserted = new Set((await this.#driver.batch(checked.enqueueMany(queue, jobs, now)))[0]!.map((row) => row.id as string));
    return jobs.map(({ id }) => {
      const created = inserted.delete(id); // a repeated id was created by its first entry only
      return { id, created };
    });
  }

  /** getJob is state that throws NotFound for an unknown id. */
  async getJob(id: string, now = Date.now()): Promise<Job> {
    const job = await this.state(id, now);
    if (job === null) throw new NotFound(id);
    return job;
  }

  /** claimJob is claim that answers the lease, or throws NotFound or NotClaimable. */
  async claimJob(id: string, owner: string, now: number, ttlMs: number): Promise<Lease> {
    const [, [written] = [], [read] = []] = await this.#driver.batch([...checked.claim(id, owner, now, ttlMs), reads.claimState(id, now)]);
    if (read === undefined) throw new NotFound(id);
    const current = jobFromRow(read);
    if (written === undefined) {
      const reason = whyNotClaimable(current.status, read.queue_refusal);
      if (reason === "rate_limited") await this.#queues.followClock(current.queue, now); // a clock stepped back: see followClock
      throw new NotClaimable(id, reason);
    }
    return { job: current, fence: current.fence, until: current.until };
  }

  /** renewLease is renew that answers the new `until`, or throws NotFound or LeaseLost (reason cancelled once the job is). */
  async renewLease(id: string, owner: string, fence: number, now: number, ttlMs: number, options: { progress?: unknown } = {}): Promise<number> {
    const { written, current } = await this.#decide(checked.renew(id, owner, fence, now, ttlMs, options.progress), id, now);
    if (written === undefined) throw refusal(id, current, owner, fence);
    return current!.until;
  }

  /**
   * completeJob is complete that answers the done job, or throws NotFound or
   * LeaseLost. The same completion sent again (same owner, fence and result)
   * answers the job again, so a retry after a lost response is not a failure.
   * With `next`, the same transaction also leases the next due jobs of the
   * job's queue to the same owner; a refused complete takes nothing.
   */
  async completeJob(id: string, owner: string, fence: number, now: number, result: string, options: { next?: NextClaim } = {}): Promise<Settled> {
    const { current, leases } = await this.#settle(checked.complete(id, owner, fence, now, result), id, owner, now, options.next);
    // Done by this very owner, fence and result: this call wrote it, or an earlier one whose answer was lost.
    const completed = current?.done && current.owner === owner && current.fence === fence && current.result === result;
    if (!completed) throw refusal(id, current, owner, fence);
    return { job: current!, leases };
  }

  /** releaseLease is release that answers the released job, or throws NotFound or LeaseLost. */
  async releaseLease(id: string, owner: string, fence: number, now: number): Promise<Job> {
    const { written, current } = await this.#decide(checked.release(id, owner, fence, now), id, now);
    if (written === undefined) throw refusal(id, current, owner, fence);
    return current!;
  }

  /**
   * failJob is fail that answers the job (queued again, or dead), or throws
   * NotFound or LeaseLost; `next` as in completeJob.
   */
  async failJob(id: string, owner: string, fence: number, now: number, error: string, options: { retryInMs?: number; next?: NextClaim } = {}): Promise<Settled> {
    const statements = checked.fail(id, owner, fence, now, error, options.retryInMs, this.#jitter());
    const { written, current, leases } = await this.#settle(statements, id, owner, now, options.next);
    if (written === undefined) throw refusal(id, current, owner, fence);
    return { job: current!, leases };
  }

  /**
   * renewMany extends each presented lease that is current to `now + ttlMs`,
   * and stores the `progress` it carries, if any, each decided alone; answers,
   * in order, each one's new `until` or why it was refused (LeaseLost, NotFound).
   * An id given twice is InvalidArgument, and nothing changes.
   */
  async renewMany(owner: string, leases: { id: string; fence: number; progress?: unknown }[], now: number, ttlMs: number): Promise<LeaseOutcome<{ until: number }>[]> {
    const held = leases.map(({ id, fence, progress }): sqlMany.HeldLease => [check.name("id", id), check.positiveInt("fence", fence), check.progress("progress", progress)]);
    check.distinctIds("leases", leases);
    const [renewed, refused] = await this.#driver.batch(sqlMany.renewMany(check.name("owner", owner), held, check.instant("now", now), check.positiveInt("ttlMs", ttlMs)));
    const until = new Map(renewed!.map((row) => [row.id as string, row.until as number]));
    return outcomes(leases, owner, refused!, (id) => ({ until: until.get(id)! }));
  }

  /**
   * completeMany stores each presented lease's result, as completeJob does
   * one, each decided alone; with `next`, the same transaction leases up to
   * `next.limit` due jobs of `next.queue` to the same owner, whatever the
   * completions' outcomes. Answers each completion's outcome, in order, the
   * leases taken, and the queues whose leases it ended (`ended`, each once).
   */
  async completeMany(owner: string, completions: { id: string; fence: number; result: string }[], now: number, next?: NextClaim & { queue: string }): Promise<{ completed: LeaseOutcome<{ done: true }>[]; leases: Lease[]; ended: string[] }> {
    const presented = completions.map(({ id, fence, result }): sqlMany.Completion => [check.name("id", id), check.positiveInt("fence", fence), check.text("result", result)]);
    check.distinctIds("leases", completions);
    const statements = sqlMany.completeMany(check.name("owner", owner), presented, check.instant("now", now));
    const take = next === undefined ? [] : checked.claimNext(next.queue, owner, now, next.ttlMs, next.limit);
    const [, done, refused, , taken = []] = await this.#driver.batch([...statements, ...take]);
    const ended = [...new Set(done!.map((row) => row.queue as string))];
    return { completed: outcomes(completions, owner, refused!, () => ({ done: true as const })), leases: leasesOf(taken), ended };
  }

  /** retryJob puts a dead job back in its queue with its attempts reset; NotFound, or WrongStatus if it is not dead. */
  async retryJob(id: string, now: number): Promise<Job> {
    const { written, current } = await this.#decide(housekeeping.retry(check.name("id", id), check.instant("now", now)), id, now);
    if (current === null) throw new NotFound(id);
    if (written === undefined) throw new WrongStatus(id, current.status, `only a dead job can be retried; job ${JSON.stringify(id)} is ${current.status}`);
    return current;
  }

  /**
   * cancelJob cancels a job that is not finished (queued, scheduled, leased, or
   * its lease expired): it becomes final, its owner and fence kept, and its
   * holder's next renew, complete, fail or release is LeaseLost with reason
   * cancelled. Answers the job and whether this call cancelled it (false: it
   * already was, and nothing changed); NotFound, or WrongStatus
   * for a job done or dead, which is left as it is.
   */
  async cancelJob(id: string, cancel: { by: string; reason?: string | null }, now: number): Promise<{ changed: boolean; job: Job }> {
    const { written, current } = await this.#decide(checked.cancel(id, cancel, now), id, now);
    if (current === null) throw new NotFound(id);
    if (written === undefined && current.status !== "cancelled") {
      throw new WrongStatus(id, current.status, `only a queued, scheduled or leased job can be cancelled; job ${JSON.stringify(id)} is ${current.status}`);
    }
    return { changed: written !== undefined, job: current };
  }

  /** deleteJob deletes a job nobody holds a current lease on; NotFound, or WrongStatus while it is leased. */
  async deleteJob(id: string, now: number): Promise<void> {
    const [, deleted, read] = (await this.#driver.batch([...housekeeping.remove(check.name("id", id), check.instant("now", now)), sql.state(id, now)])) as Row[][];
    if (deleted!.length === 1) return;
    if (read![0] === undefined) throw new NotFound(id);
    throw new WrongStatus(id, "leased", `job ${JSON.stringify(id)} is leased; it can be deleted once its lease ends`);
  }

  /**
   * leaseCheck tells a system outside whether (owner, fence) is the current
   * lease of a job and, when it is not, why: the reason a write with it would
   * be refused for. NotFound for an unknown id.
   */
  async leaseCheck(id: string, owner: string, fence: number, now: number): Promise<{ current: boolean; fence: number; until: number; reason?: LeaseLostReason }> {
    const [row] = await this.#driver.run(reads.leaseCheck(check.name("id", id), check.name("owner", owner), check.positiveInt("fence", fence), check.instant("now", now)));
    if (row === undefined) throw new NotFound(id);
    const answer = { current: row.current === 1, fence: row.fence as number, until: row.until as number };
    if (answer.current) return answer;
    return { ...answer, reason: leaseLostReason({ owner: row.owner as string | null, fence: answer.fence, status: row.status as JobStatus }, owner, fence) };
  }

  /** list pages through jobs in id order, optionally of one queue and one status; stable while jobs change. */
  async list(filter: { queue?: string; status?: JobStatus; cursor?: string; limit?: number }, now: number): Promise<Page<Job>> {
    const limit = check.positiveInt("limit", filter.limit ?? 50);
    const rows = await this.#driver.run(
      reads.list({
        queue: filter.queue === undefined ? null : check.name("queue", filter.queue),
        status: filter.status ?? null,
        after: filter.cursor === undefined ? null : check.name("cursor", filter.cursor),
        limit: limit + 1,
        now: check.instant("now", now),
      }),
    );
    const items = rows.slice(0, limit).map(jobFromRow);
    return { items, next: rows.length > limit ? items.at(-1)!.id : null };
  }

  /** events pages through a job's history, oldest first; the cursor is the last sequence number seen. */
  async events(id: string, page: { cursor?: string; limit?: number } = {}): Promise<Page<JobEvent>> {
    const limit = check.positiveInt("limit", page.limit ?? 100);
    const after = page.cursor === undefined ? 0 : check.instant("cursor", Number(page.cursor));
    const rows = await this.#driver.run(reads.events(check.name("id", id), after, limit + 1));
    const items = rows.slice(0, limit).map(eventFromRow);
    return { items, next: rows.length > limit ? String(items.at(-1)!.seq) : null };
  }

  /** pauseQueue pauses a queue: claims hand out none of its jobs until resumeQueue; leases already held go on. Answers its settings. */
  pauseQueue(queue: string, now = Date.now()): Promise<QueueSettings> {
    return this.#queues.pause(queue, true, now);
  }

  /** resumeQueue lets claims take the jobs of a paused queue again; answers its settings. */
  resumeQueue(queue: string, now = Date.now()): Promise<QueueSettings> {
    return this.#queues.pause(queue, false, now);
  }

  /**
   * setQueue sets all of a queue's limits at once, keeping whether it is
   * paused: maxLeased, at most how many current leases it may have, and
   * ratePerSecond with burst, its token bucket (absent or null: none; see
   * QueueLimits); answers its settings. Leases already held above a new limit
   * go on; a new rate starts with a full bucket, a changed one keeps the tokens it holds.
   */
  setQueue(queue: string, settings: QueueLimits, now = Date.now()): Promise<QueueSettings> {
    return this.#queues.set(queue, settings, now);
  }

  /** getQueue answers a queue's settings; a queue never set is not paused and has no limit. */
  getQueue(queue: string): Promise<QueueSettings> {
    return this.#queues.get(queue);
  }

  /** listQueues answers the settings of every queue that has settings or jobs, by name. */
  listQueues(): Promise<QueueSettings[]> {
    return this.#queues.list();
  }

  /**
   * stats answers, per queue, the jobs by status, the oldest due job's age, and
   * refused stale writes; one read, which never waits for the write lock.
   */
  async stats(now: number): Promise<QueueStats[]> {
    return queueStats(await this.#driver.run(reads.stats(check.instant("now", now))), now);
  }

  /**
   * reclaimExpired ends every expired lease (the job dies if that was its last
   * attempt), in chunks (see HousekeepingOptions); answers each job whose
   * lease it ended, with its queue and whether it died.
   */
  async reclaimExpired(now: number, options: HousekeepingOptions = {}): Promise<{ id: string; queue: string; dead: boolean }[]> {
    check.instant("now", now);
    const ended: { id: string; queue: string; dead: boolean }[] = [];
    await inChunks(options, async (size) => {
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
  async purge(now: number, retentionMs: number, options: HousekeepingOptions = {}): Promise<number> {
    const cutoff = check.instant("now", now) - check.positiveInt("retentionMs", retentionMs);
    let purged = 0;
    await inChunks(options, async (size) => {
      const [, , jobs, events] = await this.#driver.batch(housekeeping.purge(cutoff, size));
      purged += jobs!.length;
      return jobs!.length === size || events!.filter((event) => event.kind === "deleted").length === size;
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

  /** Runs a verb's batch; answers the first row its deciding statement (at `writeAt`) returned, if it wrote. */
  async #write(statements: Statement[], writeAt = 0): Promise<Row | undefined> {
    return (await this.#driver.batch(statements))[writeAt]![0];
  }

  /** Runs the batch of a verb that ends a lease, then the claim of `next` if asked, then the read of the job: all in one transaction. */
  async #settle(statements: Statement[], id: string, owner: string, now: number, next: NextClaim | undefined) {
    const take = next === undefined ? [] : [sql.claimNextAfter(id, owner, now, { limit: check.positiveInt("limit", next.limit), ttlMs: check.positiveInt("ttlMs", next.ttlMs) })];
    const results = await this.#driver.batch([...statements, ...take, sql.state(id, now)]);
    const read = results.at(-1)!;
    return { written: results[0]![0], current: read[0] ? jobFromRow(read[0]) : null, leases: next === undefined ? [] : leasesOf(results.at(-2)!) };
  }

  /** Runs a verb's batch and reads its job in the same transaction: the rows its write answered, and the job as it is now. */
  async #decide(statements: Statement[], id: string, now: number, writeAt = 0): Promise<{ written: Row | undefined; current: Job | null }> {
    const results = await this.#driver.batch([...statements, sql.state(id, now)]);
    const read = results.at(-1)!;
    return { written: results[writeAt]![0], current: read[0] ? jobFromRow(read[0]) : null };
  }
}
