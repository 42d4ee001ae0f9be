import type { Driver, Row, Statement } from "../drivers/driver.ts";
import { InvalidArgument } from "./errors.ts";
import { type Job, jobFromRow, type JobStatus } from "./job.ts";
import { inChunks } from "./in-chunks.ts";
import { BULK_ACTIONS, type BulkOutcome, type BulkRequest, type ChangedJob, type JobFilter, type Page } from "./shapes.ts";
import { STATUSES } from "./sql/lease.ts";
import * as sql from "./sql/search.ts";
import * as check from "./validate.ts";

// Search and the bulk actions (issue 31; docs/search.md): the filters checked,
// the range of ids a search reads, a page of the jobs that match, and the
// chunks of a bulk action. The statements are in src/store/sql/search.ts.

/** How many jobs one search (a page, or a chunk of a bulk action) looks at, at most. */
export const SEARCH_SCAN = 20_000;

/** How many jobs a bulk action takes by default, and at most, in one call. */
export const BULK_LIMITS = { default: 1_000, max: 10_000 } as const;

/**
 * How many jobs one transaction of a bulk action takes, at most: few enough
 * that the calls it holds up while it runs wait about as long as a call of
 * their own (test/http/bulk-latency.test.ts measures it).
 */
export const BULK_CHUNK = 50;

/** How many chunks of one bulk call may stop at SEARCH_SCAN jobs looked at, short of their size: then it has looked at 1,000,000 jobs, and answers where to go on. */
export const BULK_MAX_SCANS = 50;

/** The longest text a search asks lastError to contain, in bytes of UTF-8. */
export const MAX_ERROR_SEARCH_BYTES = 1024;

/** SQLite's order of text (BINARY: the bytes of UTF-8, which is the order of code points), which JavaScript's `<` is not. */
export function byCodePoint(a: string, b: string): number {
  const left = [...a];
  const right = [...b];
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const difference = left[i]!.codePointAt(0)! - right[i]!.codePointAt(0)!;
    if (difference !== 0) return difference;
  }
  return left.length - right.length;
}

/**
 * The first text after every text that starts with `prefix`, in SQLite's
 * order: the prefix with its last character made the next one (over the
 * surrogates, which no text holds). UTF-8 keeps the order of code points and
 * no character's bytes begin another's, so the ids of [prefix, end) are
 * exactly those that start with it. A last character U+10FFFF has no next:
 * it goes, and the one before it is made the next. Null when every
 * character is U+10FFFF: every text from the prefix on starts with it.
 */
export function prefixEnd(prefix: string): string | null {
  const characters = [...prefix];
  while (characters.length > 0) {
    const last = characters.pop()!.codePointAt(0)!;
    if (last === 0x10ffff) continue;
    return characters.join("") + String.fromCodePoint(last === 0xd7ff ? 0xe000 : last + 1);
  }
  return null;
}

/** A time of a filter: absent, or integer ms since the epoch. */
function time(what: string, value: number | undefined): number | null {
  return value === undefined ? null : check.instant(what, value);
}

/** A range of times, `from` not after `to`. */
function times(name: string, from: number | undefined, to: number | undefined): [number | null, number | null] {
  const range: [number | null, number | null] = [time(`${name}From`, from), time(`${name}To`, to)];
  if (range[0] !== null && range[1] !== null && range[0] > range[1]) {
    throw new InvalidArgument(`${name}From must not be after ${name}To, got ${range[0]} > ${range[1]}: the range would match nothing`);
  }
  return range;
}

/** The statuses asked for, as JSON, or null for any. */
function statuses(value: JobFilter["status"]): string | null {
  if (value === undefined) return null;
  const asked: unknown[] = typeof value === "string" ? [value] : Array.isArray(value) ? value : [value];
  if (asked.length === 0) throw new InvalidArgument(`status must be one or more of ${STATUSES.join(", ")}, got none`);
  for (const status of asked) {
    if (!(STATUSES as readonly unknown[]).includes(status)) throw new InvalidArgument(`status must be one of ${STATUSES.join(", ")}, got ${check.describe(status)}`);
  }
  return JSON.stringify([...new Set(asked)]);
}

/** The text lastError must contain: non-empty, at most MAX_ERROR_SEARCH_BYTES. */
function errorText(value: unknown): string | null {
  if (value === undefined) return null;
  const text = check.shortText("error", value, MAX_ERROR_SEARCH_BYTES)!;
  if (text === "") throw new InvalidArgument("error must be the text lastError contains, not empty");
  return text;
}

/** Where a search starts and what it answers: after `cursor`, at `now`, up to `limit` matches among `scan` jobs looked at, in a token's queues (`scope`, JSON). */
export type SearchAt = { cursor: string | null; limit: number; now: number; scope: string | null; scan?: number | undefined };

/** How many jobs a search looks at: SEARCH_SCAN, or fewer when asked (a test's smaller world). */
function scanOf(scan: number | undefined): number {
  if (scan === undefined) return SEARCH_SCAN;
  const checked = check.positiveInt("scan", scan);
  if (checked > SEARCH_SCAN) throw new InvalidArgument(`scan must be at most ${SEARCH_SCAN}, got ${checked}`);
  return checked;
}

/** What a search is asked: a filter checked, where it starts and what it answers (SearchAt). */
export function searchOf(filter: JobFilter, at: SearchAt): sql.Search {
  const idPrefix = filter.idPrefix === undefined ? null : check.name("idPrefix", filter.idPrefix);
  const cursor = at.cursor === null ? null : check.name("cursor", at.cursor);
  const [createdFrom, createdTo] = times("created", filter.createdFrom, filter.createdTo);
  const [finishedFrom, finishedTo] = times("finished", filter.finishedFrom, filter.finishedTo);
  const fromPrefix = idPrefix !== null && (cursor === null || byCodePoint(cursor, idPrefix) < 0);
  return {
    start: { from: fromPrefix ? idPrefix : (cursor ?? ""), inclusive: fromPrefix, end: idPrefix === null ? null : prefixEnd(idPrefix) },
    scan: scanOf(at.scan),
    now: check.instant("now", at.now),
    scope: at.scope,
    queue: filter.queue === undefined ? null : check.name("queue", filter.queue),
    statuses: statuses(filter.status),
    key: filter.key === undefined ? null : check.key("key", filter.key),
    error: errorText(filter.error),
    createdFrom,
    createdTo,
    finishedFrom,
    finishedTo,
    limit: check.positiveInt("limit", at.limit),
  };
}

/** A job as a bulk action's write answers it (RETURNING_CHANGED of src/store/sql/search.ts). */
function changedOf(row: Row): ChangedJob {
  return { id: row.id as string, queue: row.queue as string, owner: row.owner as string | null, until: row.until as number, status: row.status as JobStatus };
}

/** A page's rows as jobs, and the last id its search looked at when it stopped at its bound short of a page (else null). */
function pageOf(rows: Row[]): { jobs: Job[]; lastExamined: string | null } {
  return { jobs: rows.filter((row) => row.id !== null).map(jobFromRow), lastExamined: (rows[0]?.last_examined as string | null | undefined) ?? null };
}

/**
 * A page of up to `limit` jobs that match `filter`, in id order after
 * `cursor`. The next cursor is the page's last job when more may match;
 * when the search stopped at SEARCH_SCAN jobs looked at, short of a page, the
 * last id it looked at (the page may then be short, or empty); else null.
 */
export async function searchPage(driver: Driver, filter: JobFilter, at: SearchAt): Promise<Page<Job>> {
  const limit = check.positiveInt("limit", at.limit);
  const { jobs, lastExamined } = pageOf(await driver.run(sql.page(searchOf(filter, { ...at, limit: limit + 1 }))));
  const items = jobs.slice(0, limit);
  return { items, next: jobs.length > limit ? items.at(-1)!.id : lastExamined };
}

/** Each action's statements over the jobs a search matches, and why it leaves a matching job as it is. */
const ACTIONS: Record<BulkRequest["action"], { statements: (search: sql.Search, request: BulkRequest) => Statement[]; skipped: string }> = {
  retry: { statements: (search) => sql.retryMatching(search), skipped: "not_dead_or_cancelled" },
  cancel: { statements: (search, request) => sql.cancelMatching(search, check.name("by", request.by ?? "api"), check.shortText("reason", request.reason, check.MAX_REASON_BYTES)), skipped: "already_finished" },
  delete: { statements: (search) => sql.removeMatching(search), skipped: "not_finished" },
};

/** A bulk request's action, limit and dryRun, checked. */
function checkedBulk(request: BulkRequest): { action: (typeof ACTIONS)[BulkRequest["action"]]; limit: number; dryRun: boolean } {
  if (!(BULK_ACTIONS as readonly unknown[]).includes(request.action)) throw new InvalidArgument(`action must be one of ${BULK_ACTIONS.join(", ")}, got ${check.describe(request.action)}`);
  const limit = check.positiveInt("limit", request.limit ?? BULK_LIMITS.default);
  if (limit > BULK_LIMITS.max) throw new InvalidArgument(`limit must be at most ${BULK_LIMITS.max}, got ${limit}; go on from the answer's nextCursor`);
  if (request.dryRun !== undefined && typeof request.dryRun !== "boolean") throw new InvalidArgument(`dryRun must be true or false, got ${check.describe(request.dryRun)}`);
  return { action: ACTIONS[request.action], limit, dryRun: request.dryRun === true };
}

/** How many times as long as a chunk took a bulk action rests after it: it takes at most a ninth of the time. */
export const BULK_REST_FACTOR = 8;

/**
 * Rests after a chunk that took `ms`: on a file, a transaction holds the
 * event loop while it runs, and each call that meets one needs a few turns
 * (its body read, its write, its answer sent), so a bulk action that only
 * yielded one turn between chunks would hold each of them up for a chunk at
 * every turn. And the pages a bulk action writes bring SQLite's checkpoints
 * (one each 1,000 pages, about 5 ms each, which hold up whatever call meets
 * them) sooner: resting BULK_REST_FACTOR times as long as it worked spreads
 * them over enough of the other calls' time that their p99 stays where it
 * was (test/http/bulk-latency.test.ts), whatever the chunks cost.
 */
function restAfter(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, BULK_REST_FACTOR * ms));
}

/**
 * Runs a bulk action over up to `limit` jobs that match its filter, from its
 * cursor on, in chunks of at most BULK_CHUNK: each chunk one transaction that
 * reads the chunk's jobs and acts on them by the action's own conditions, a
 * rest after each (restAfter). Stops at `limit` jobs, at the end of
 * the filter's range (next null), or after BULK_MAX_SCANS chunks that
 * stopped at their bound.
 */
export async function bulk(driver: Driver, request: BulkRequest, now: number, scope: string | null): Promise<BulkOutcome> {
  const { scan } = request;
  const { action, limit, dryRun } = checkedBulk(request);
  const filter = request.filter ?? {};
  const outcome: BulkOutcome = { matched: 0, changed: [], skipped: {}, next: request.cursor ?? null };
  let scans = 0;
  await inChunks({ chunkSize: BULK_CHUNK }, async (size) => {
    const search = searchOf(filter, { cursor: outcome.next, limit: Math.min(size, limit - outcome.matched), now, scope, scan });
    const acting = action.statements(search, request); // built (and by and reason checked) on a dry run too
    const started = performance.now();
    const results = await driver.batch([sql.page(search), ...(dryRun ? [] : acting)]);
    await restAfter(performance.now() - started);
    const { jobs, lastExamined } = pageOf(results[0]!);
    const changed = dryRun ? [] : results.at(-1)!.map(changedOf);
    const ids = new Set(changed.map((job) => job.id));
    const left = jobs.filter((job) => !ids.has(job.id)).length;
    if (left > 0 && !dryRun) outcome.skipped[action.skipped] = (outcome.skipped[action.skipped] ?? 0) + left;
    outcome.matched += jobs.length;
    outcome.changed.push(...changed);
    outcome.next = jobs.length === search.limit ? jobs.at(-1)!.id : lastExamined;
    if (jobs.length < search.limit && lastExamined !== null) scans++;
    return outcome.next !== null && outcome.matched < limit && scans < BULK_MAX_SCANS;
  });
  return outcome;
}
