import { Cron } from "croner";
import type { Row } from "../drivers/driver.ts";
import { InvalidArgument } from "./errors.ts";
import type { Fire, StoredSpec } from "./sql/schedules.ts";
import * as check from "./validate.ts";

// When a schedule fires: its arguments checked, and its fires computed, with
// croner for cron expressions (five fields, read in an IANA time zone, its
// daylight saving rules included). Pure arithmetic: what is due, and whether a
// fire is still due when it is written, is decided by the statements of
// src/store/sql/schedules.ts.

/** What a schedule is given: its queue, when it fires (exactly one of cron and everyMs), and the jobs it enqueues. */
export type ScheduleSpec = {
  /** The queue its jobs go to. */
  queue: string;
  /** Five fields (minute hour day-of-month month day-of-week), read in `timezone`; e.g. "0 9 * * 1-5". */
  cron?: string | undefined;
  /** Or: every this many ms (at least 1000), from the schedule's creation. */
  everyMs?: number | undefined;
  /** The IANA time zone a cron is read in; default "UTC". Not with everyMs. */
  timezone?: string | undefined;
  /** Any JSON value, every job's payload; default null. */
  payload?: unknown;
  /** Every job's priority; default 0. */
  priority?: number | undefined;
  /** Every job's maxAttempts; default 25. */
  maxAttempts?: number | undefined;
  /** Every job's key (docs/queues.md#keys): 1 to 255 bytes of printable text; default none. */
  key?: string | null | undefined;
};

/** The shortest everyMs: a second. */
export const MIN_EVERY_MS = 1_000;

/** The longest name, in bytes of UTF-8: its jobs' ids (`{name}@` and 24 characters of ISO time) then fit in the API's 255. */
export const MAX_NAME_BYTES = 230;


/** A schedule's name: a job id's rules, without "@" (it separates the name from the fire time) and at most MAX_NAME_BYTES. */
export function scheduleName(name: unknown): string {
  const checked = check.name("name", name);
  if (checked.includes("@")) throw new InvalidArgument(`name must not contain "@", which separates a schedule's name from the fire time in its jobs' ids; got ${JSON.stringify(checked)}`);
  if (check.utf8Bytes(checked) > MAX_NAME_BYTES) throw new InvalidArgument(`name must be at most ${MAX_NAME_BYTES} bytes of UTF-8, so that its jobs' ids ({name}@{fire time}) fit in 255`);
  if (checked === "." || checked === "..") throw new InvalidArgument('name must not be "." or "..", which URLs rewrite');
  return checked;
}

/** The cron expression in its time zone; InvalidArgument naming the field that is wrong. */
function cronOf(cron: string, timezone: string): Cron {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
  } catch {
    throw new InvalidArgument(`timezone ${JSON.stringify(timezone)} is not a time zone this server knows; give an IANA name such as "Europe/Paris" or "UTC"`);
  }
  // croner's own count error speaks of five, six or seven parts; fencelease takes five (or a nickname such as @daily).
  const fields = cron.trim().split(/\s+/).length;
  if (!cron.trim().startsWith("@") && fields !== 5) {
    throw new InvalidArgument(`cron ${JSON.stringify(cron)} has ${fields} field${fields === 1 ? "" : "s"}; give five fields, minute hour day-of-month month day-of-week, e.g. "0 9 * * 1-5"`);
  }
  try {
    return new Cron(cron, { timezone, mode: "5-part" });
  } catch (error) {
    const why = (error as Error).message.replace(/^CronPattern: /, "");
    throw new InvalidArgument(`cron ${JSON.stringify(cron)} is not a cron expression (${why}); give five fields, minute hour day-of-month month day-of-week, e.g. "0 9 * * 1-5"`);
  }
}

/**
 * The spec checked, as stored: exactly one of cron and everyMs, the defaults
 * filled in. InvalidArgument names the field that is wrong. A cron is read
 * once, by firstCronFire, which refuses one that is not a cron expression.
 */
export function storedSpec(spec: ScheduleSpec): StoredSpec {
  const { cron, everyMs, timezone } = spec;
  if (cron !== undefined && everyMs !== undefined) throw new InvalidArgument("give cron or everyMs, not both");
  if (cron === undefined && everyMs === undefined) {
    throw new InvalidArgument('give cron (a cron expression, e.g. "0 9 * * *") or everyMs (an interval in ms, at least 1000)');
  }
  if (everyMs !== undefined && timezone !== undefined) throw new InvalidArgument("timezone goes with cron only; an everyMs schedule fires every everyMs ms in any time zone");
  if (everyMs !== undefined && !(Number.isSafeInteger(everyMs) && everyMs >= MIN_EVERY_MS)) {
    throw new InvalidArgument(`everyMs must be a whole number of ms, at least ${MIN_EVERY_MS} (a second), got ${JSON.stringify(everyMs)}`);
  }
  return {
    queue: check.name("queue", spec.queue),
    cron: cron === undefined ? null : check.name("cron", cron),
    everyMs: everyMs ?? null,
    timezone: cron === undefined ? null : check.name("timezone", timezone ?? "UTC"),
    payload: check.json("payload", spec.payload),
    priority: check.integer("priority", spec.priority ?? 0),
    maxAttempts: check.positiveInt("maxAttempts", spec.maxAttempts ?? 25),
    key: check.key("key", spec.key),
  };
}

/** A cron's first fire strictly after `now`; InvalidArgument if it has none (e.g. "0 0 30 2 *"). */
export function firstCronFire(cron: string, timezone: string, now: number): number {
  const next = cronOf(cron, timezone).nextRun(new Date(now));
  if (next === null) throw new InvalidArgument(`cron ${JSON.stringify(cron)} never fires (no such date); check its day-of-month and month`);
  return next.getTime();
}

/** The id of the job a schedule enqueues for the fire at `fireAt`: `{name}@{ISO 8601 time}`. */
function fireJobId(name: string, fireAt: number): string {
  return `${name}@${new Date(fireAt).toISOString()}`;
}

/**
 * The fire of a due schedule (a row of `dueSchedules`) at `now`: the latest
 * of its fires at or before `now` (never one before the next_fire_at it read,
 * so only the latest missed fire is enqueued), and its first fire after `now`.
 * A schedule whose next fire has not come (it is due because the clock stepped
 * back since that fire was planned) has no fire: only the first after `now`.
 * An everyMs schedule fires at created_at + k * every_ms.
 */
export function dueFire(row: Row, now: number): Fire {
  const name = row.name as string;
  const readNext = row.next_fire_at as number | null;
  let latest: number;
  let next: number | null;
  if (row.every_ms !== null) {
    const every = row.every_ms as number;
    const anchor = row.created_at as number;
    latest = anchor + Math.floor((now - anchor) / every) * every;
    next = latest + every;
  } else {
    const cron = cronOf(row.cron as string, row.timezone as string);
    // previousRuns answers the runs strictly before its reference: the latest at or before `now` (none: the next_fire_at read stands).
    latest = cron.previousRuns(1, new Date(now + 1))[0]?.getTime() ?? -Infinity;
    next = cron.nextRun(new Date(now))?.getTime() ?? null;
  }
  const fireAt = readNext !== null && readNext <= now ? Math.max(latest, readNext) : null;
  return [name, readNext, row.cron as string | null, row.every_ms as number | null, row.timezone as string | null, row.created_at as number, fireAt, fireAt === null ? null : fireJobId(name, fireAt), next];
}
