import type { Driver, Row } from "../drivers/driver.ts";
import { NotFound, ScheduleNameTaken } from "./errors.ts";
import { inChunks } from "./in-chunks.ts";
import { storedJson } from "../json/depth.ts";
import { dueFire, firstCronFire, type ScheduleSpec, scheduleName, storedSpec } from "./schedule-times.ts";
import * as sql from "./sql/schedules.ts";
import type { Fire } from "./sql/schedules.ts";
import { type HousekeepingOptions, timeOf } from "./shapes.ts";
import * as check from "./validate.ts";

export type { ScheduleSpec } from "./schedule-times.ts";

/** A recurring schedule as stored (migrations/0011, its key 0034); times in ms since the epoch. */
export type Schedule = {
  name: string;
  queue: string;
  /** The cron expression, or null for an everyMs schedule. */
  cron: string | null;
  /** The interval, or null for a cron schedule. */
  everyMs: number | null;
  /** The IANA time zone the cron is read in; null for an everyMs schedule. */
  timezone: string | null;
  payload: unknown;
  priority: number;
  maxAttempts: number;
  /** Every job's key (docs/queues.md#keys), or null. */
  key: string | null;
  /** The next fire not yet enqueued; null when a cron has no time left. */
  nextFireAt: number | null;
  /** The last fire; null before the first. */
  lastFireAt: number | null;
  /** Whether the last fire found its job's id taken, and so enqueued nothing (a job of that id was there already). */
  lastFireTaken: boolean;
  createdAt: number;
  updatedAt: number;
};

/** A job a fire enqueued. */
export type FiredJob = { id: string; queue: string };

/** A due schedule whose fire could not be computed (a cron or time zone this runtime does not read), and why. */
export type SkippedSchedule = { name: string; error: string };

/** A fire that enqueued nothing: a job had its id already (see `Schedule.lastFireTaken`). */
export type TakenFire = { name: string; id: string };

/**
 * What fireDue did: the jobs it enqueued, the fires that found their job's id
 * taken and enqueued nothing, the schedules it had to skip, and when the
 * earliest other schedule fires next (null: none will).
 */
export type Fired = { jobs: FiredJob[]; taken: TakenFire[]; skipped: SkippedSchedule[]; nextFireAt: number | null };

/** Reads a `schedules` row into a Schedule. */
function scheduleFromRow(row: Row): Schedule {
  return {
    name: row.name as string,
    queue: row.queue as string,
    cron: row.cron as string | null,
    everyMs: row.every_ms as number | null,
    timezone: row.timezone as string | null,
    payload: row.payload === null ? null : storedJson(row.payload as string),
    priority: row.priority as number,
    maxAttempts: row.max_attempts as number,
    key: (row.key as string | null | undefined) ?? null,
    nextFireAt: row.next_fire_at as number | null,
    lastFireAt: row.last_fire_at as number | null,
    lastFireTaken: row.last_fire_taken === 1,
    createdAt: row.created_at as number,
    updatedAt: row.updated_at as number,
  };
}

/**
 * A due schedule's fire, or none if it cannot be computed here (its cron or
 * time zone stored by another runtime, or another version of croner): that
 * schedule is noted in `skipped`, left as it is for a runtime that can, and
 * the others fire.
 */
function fireOrSkip(row: Row, now: number, skipped: SkippedSchedule[]): Fire[] {
  try {
    return [dueFire(row, now)];
  } catch (error) {
    skipped.push({ name: row.name as string, error: (error as Error).message });
    return [];
  }
}

const notFound = (name: string) => new NotFound(name, `no schedule has the name ${JSON.stringify(name)}`);

/**
 * The store's recurring schedules (`store.schedules`), over the same Driver.
 * Each due fire enqueues one job, `{name}@{fire time as ISO 8601}`, in the
 * transaction that moves the schedule on to its next fire: at most once per
 * fire, however many runners fire together, and after downtime (or a clock
 * that steps forward) only the latest missed fire. After this store's clock
 * steps back (src/store/step-back.ts), the next fire is planned again from the
 * corrected clock; a fire whose job is there already enqueues nothing. A
 * store whose clock is behind another's, up to SKEW_LIMIT_MS, waits for it.
 */
export class Schedules {
  readonly #driver: Driver;
  readonly #clock: string;

  /** `clock`: the store's clock id (src/store/step-back.ts), which planned_at is kept with. */
  constructor(driver: Driver, clock: string) {
    this.#driver = driver;
    this.#clock = clock;
  }

  /**
   * put creates or replaces a schedule (a replace keeps its createdAt,
   * the anchor of everyMs, and its lastFireAt); its next fire is the first one
   * after `now` (default `Date.now()`). Answers whether it was created, and the schedule.
   * InvalidArgument, naming the field, for a bad spec; nothing is written then.
   * With `replacing`, the queue whose schedule of that name it may replace
   * (null: none): ScheduleNameTaken, nothing written, when the name is held by
   * another queue's schedule by the time it writes (decided in the write).
   */
  async put(name: string, spec: ScheduleSpec & { now?: number | undefined; replacing?: string | null | undefined }): Promise<{ created: boolean; schedule: Schedule }> {
    const now = timeOf(spec);
    const checkedName = scheduleName(name);
    const stored = storedSpec(spec);
    check.instant("now", now);
    const cronNext = stored.cron === null ? null : firstCronFire(stored.cron, stored.timezone!, now);
    const replacing = spec.replacing == null ? spec.replacing : check.name("replacing", spec.replacing);
    const [existed, written] = await this.#driver.batch(sql.putSchedule(checkedName, stored, cronNext, now, this.#clock, replacing));
    if (written!.length === 0) throw new ScheduleNameTaken(checkedName);
    return { created: existed![0]!.existed === 0, schedule: scheduleFromRow(written![0]!) };
  }

  /** get answers one schedule; NotFound if there is none of that name. */
  async get(name: string): Promise<Schedule> {
    const [row] = await this.#driver.run(sql.getSchedule(check.name("name", name)));
    if (row === undefined) throw notFound(name);
    return scheduleFromRow(row);
  }

  /** list answers every schedule, by name. */
  async list(): Promise<Schedule[]> {
    return (await this.#driver.run(sql.listSchedules())).map(scheduleFromRow);
  }

  /** delete deletes a schedule, which then never fires again (the jobs it enqueued stay); NotFound if there is none. */
  async delete(name: string): Promise<void> {
    const [deleted] = await this.#driver.batch([sql.deleteSchedule(check.name("name", name))]);
    if (deleted!.length === 0) throw notFound(name);
  }

  /**
   * fireDue enqueues the job of every schedule due at `now` (the
   * latest fire at or before `now` of each; one of a schedule another runner
   * fired or a put replaced meanwhile is left to it), and plans again from
   * `now` the next fire of each schedule planned by this store's clock before
   * it stepped back (or by another clock far ahead, see src/store/step-back.ts), in chunks of schedules (see HousekeepingOptions). Answers
   * the jobs enqueued, the fires that found their job's id taken (and enqueued
   * nothing), and when the earliest schedule fires next.
   */
  async fireDue(request: HousekeepingOptions & { now?: number | undefined } = {}): Promise<Fired> {
    const now = check.instant("now", timeOf(request));
    const jobs: FiredJob[] = [];
    const taken: TakenFire[] = [];
    const skipped: SkippedSchedule[] = [];
    await inChunks(request, async (size) => {
      const due = await this.#driver.run(sql.dueSchedules(now, size, skipped.map((schedule) => schedule.name), this.#clock));
      const fires = due.flatMap((row) => fireOrSkip(row, now, skipped));
      // No fire (nothing due, or every due schedule skipped): no write transaction.
      if (fires.length > 0) {
        const [, enqueued, moved] = await this.#driver.batch(sql.fireDue(fires, now, this.#clock));
        for (const row of enqueued!) jobs.push({ id: row.id as string, queue: row.queue as string });
        const jobIds = new Map(fires.map(([name, , , , , , , jobId]) => [name, jobId]));
        for (const row of moved!) {
          const id = jobIds.get(row.name as string);
          if (id && row.last_fire_taken === 1) taken.push({ name: row.name as string, id });
        }
      }
      return due.length === size;
    });
    const [next] = await this.#driver.run(sql.nextFire(skipped.map((schedule) => schedule.name)));
    return { jobs, taken, skipped, nextFireAt: (next?.at as number | undefined) ?? null };
  }
}
