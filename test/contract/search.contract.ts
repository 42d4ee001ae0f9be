import { describe, expect, test } from "vitest";
import { InvalidArgument, LeaseLost } from "../../src/store/errors.ts";
import type { JobFilter, LeaseStore } from "../../src/store/store.ts";
import { noteVerbs } from "../../src/store/note.ts";
import type { FreshStorage } from "./storage.contract.ts";

// Search and the bulk actions (issue 31) over the store, on every driver:
// each filter alone and together, pages bounded by how many jobs they look
// at, and retry, cancel and delete by filter, each job decided by the
// action's own statement. Each test starts on a fresh, empty database.

const HOUR = 3_600_000;
const T = 100 * HOUR; // the test clock
const TTL = 30_000;

/** The ids of every page of a search, page by page, followed to its end. */
async function pages(store: LeaseStore, request: Parameters<LeaseStore["list"]>[0]): Promise<string[][]> {
  const all: string[][] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await store.list({ ...request, cursor, now: request?.now ?? T + 10 });
    all.push(page.items.map((job) => job.id));
    if (page.next === null) return all;
    cursor = page.next;
  }
}

/** Registers the search contract for one driver. */
export function searchContract(freshStore: () => Promise<FreshStorage>): void {
  /**
   * A small world at T + 10: in queue q, `a-queued`, `a-later` (scheduled),
   * `b-held` (leased by A), `b-done` (completed at T + 3), `c-dead` (failed
   * "disk full" on its one attempt at T + 4), `c-cancelled` (at T + 5); in
   * queue other, `a-other` (key tenant-1) and `d-dead` ("disk quota"). Created
   * at T, but a-later and the last two at T + 1.
   */
  async function world() {
    const fresh = await freshStore();
    const { store } = fresh;
    await store.enqueue("a-queued", { queue: "q", key: "tenant-1", now: T });
    await store.enqueue("a-later", { queue: "q", runAt: T + HOUR, now: T + 1 });
    await store.enqueue("b-held", { queue: "q", now: T });
    await store.enqueue("b-done", { queue: "q", now: T });
    await store.enqueue("c-dead", { queue: "q", maxAttempts: 1, now: T });
    await store.enqueue("c-cancelled", { queue: "q", now: T });
    await store.enqueue("a-other", { queue: "other", key: "tenant-1", now: T + 1 });
    await store.enqueue("d-dead", { queue: "other", maxAttempts: 1, now: T + 1 });
    await store.claim("b-held", { owner: "A", ttlMs: HOUR, now: T + 2 });
    await store.claim("b-done", { owner: "B", ttlMs: TTL, now: T + 2 });
    await store.complete("b-done", { owner: "B", fence: 1, result: "ok", now: T + 3 });
    await store.claim("c-dead", { owner: "C", ttlMs: TTL, now: T + 2 });
    await store.fail("c-dead", { owner: "C", fence: 1, error: "disk full on /var", now: T + 4 });
    await store.claim("d-dead", { owner: "D", ttlMs: TTL, now: T + 2 });
    await store.fail("d-dead", { owner: "D", fence: 1, error: "Disk quota", now: T + 6 });
    await store.cancel("c-cancelled", { by: "ops", now: T + 5 });
    return fresh;
  }

  describe("search", () => {
    test("each filter alone, and together: every filter given holds", async () => {
      const { store } = await world();
      const ids = async (filter: JobFilter) => (await store.list({ ...filter, now: T + 10 })).items.map((job) => job.id);
      expect(await ids({})).toEqual(["a-later", "a-other", "a-queued", "b-done", "b-held", "c-cancelled", "c-dead", "d-dead"]);
      expect(await ids({ queue: "other" })).toEqual(["a-other", "d-dead"]);
      expect(await ids({ status: "dead" })).toEqual(["c-dead", "d-dead"]);
      expect(await ids({ status: ["dead", "cancelled", "scheduled"] })).toEqual(["a-later", "c-cancelled", "c-dead", "d-dead"]);
      expect(await ids({ key: "tenant-1" })).toEqual(["a-other", "a-queued"]);
      expect(await ids({ idPrefix: "b-" })).toEqual(["b-done", "b-held"]);
      expect(await ids({ idPrefix: "a-q" })).toEqual(["a-queued"]);
      expect(await ids({ error: "disk" })).toEqual(["c-dead"]); // case counts
      expect(await ids({ error: "isk f" })).toEqual(["c-dead"]);
      expect(await ids({ createdFrom: T + 1 })).toEqual(["a-later", "a-other", "d-dead"]);
      expect(await ids({ createdTo: T })).toEqual(["a-queued", "b-done", "b-held", "c-cancelled", "c-dead"]);
      expect(await ids({ createdFrom: T + 1, createdTo: T + 1 })).toEqual(["a-later", "a-other", "d-dead"]);
      // finished: done, dead or cancelled, by when it finished
      expect(await ids({ finishedFrom: T })).toEqual(["b-done", "c-cancelled", "c-dead", "d-dead"]);
      expect(await ids({ finishedFrom: T + 4, finishedTo: T + 5 })).toEqual(["c-cancelled", "c-dead"]);
      expect(await ids({ finishedTo: T + 3 })).toEqual(["b-done"]);
      expect(await ids({ queue: "q", status: ["queued", "leased"], idPrefix: "b" })).toEqual(["b-held"]);
      expect(await ids({ key: "tenant-1", queue: "q", createdTo: T })).toEqual(["a-queued"]);
      expect(await ids({ status: "dead", error: "Disk", queue: "other", finishedFrom: T + 6 })).toEqual(["d-dead"]);
      expect(await ids({ idPrefix: "z" })).toEqual([]);
    });

    test("status is each job's at now: a lease that ran out is no longer leased, a job due by then is queued", async () => {
      const { store } = await world();
      expect((await store.list({ status: "leased", now: T + 2 + HOUR })).items).toEqual([]);
      expect((await store.list({ status: "queued", queue: "q", now: T + 2 * HOUR })).items.map((job) => job.id)).toEqual(["a-later", "a-queued", "b-held"]);
    });

    test("an id prefix is a range of the primary key: exact over characters of every width, and the cursor goes on inside it", async () => {
      const { store } = await freshStore();
      const ids = ["é", "éa", "é\u{10FFFF}", "é\u{10FFFF}z", "ê", "e", "\u{10FFFF}", "\u{10FFFF}\u{10FFFF}", "\uD7FFx", "\uE000", "a%", "a_b", "ab"];
      for (const id of ids) await store.enqueue(id, { now: T });
      const prefixed = async (idPrefix: string) => (await pages(store, { idPrefix, limit: 1 })).flat();
      expect(await prefixed("é")).toEqual(["é", "éa", "é\u{10FFFF}", "é\u{10FFFF}z"]);
      expect(await prefixed("é\u{10FFFF}")).toEqual(["é\u{10FFFF}", "é\u{10FFFF}z"]);
      expect(await prefixed("\u{10FFFF}")).toEqual(["\u{10FFFF}", "\u{10FFFF}\u{10FFFF}"]);
      expect(await prefixed("\uD7FF")).toEqual(["\uD7FFx"]);
      expect(await prefixed("a%")).toEqual(["a%"]); // no LIKE: % and _ are characters
      expect(await prefixed("a_")).toEqual(["a_b"]);
      // A cursor before the prefix starts at the prefix; one past its range ends the search.
      expect((await store.list({ idPrefix: "é", cursor: "a", now: T })).items.map((job) => job.id)).toEqual(["é", "éa", "é\u{10FFFF}", "é\u{10FFFF}z"]);
      expect(await store.list({ idPrefix: "é", cursor: "ê", now: T })).toEqual({ items: [], next: null });
    });

    test("a page looks at `scan` jobs at most: short of a page, it answers the matches so far and the last id it looked at", async () => {
      const { store } = await freshStore();
      const jobs = Array.from({ length: 30 }, (_, i) => ({ id: `job-${String(i).padStart(2, "0")}` }));
      await store.enqueueMany("q", { jobs: jobs.slice(0, 10), now: T });
      await store.enqueueMany("rare", { jobs: jobs.slice(10, 11), now: T });
      await store.enqueueMany("q", { jobs: jobs.slice(11), now: T });
      expect(await store.list({ queue: "rare", scan: 8, now: T })).toEqual({ items: [], next: "job-07" });
      expect(await store.list({ queue: "rare", scan: 8, cursor: "job-07", now: T })).toMatchObject({ items: [{ id: "job-10" }], next: "job-15" });
      expect(await pages(store, { queue: "rare", scan: 8 })).toEqual([[], ["job-10"], [], []]);
      // A full page needs no bound: its cursor is its last job, and a search that read its range to the end has none.
      expect(await store.list({ queue: "q", scan: 8, limit: 3, now: T })).toMatchObject({ items: [{ id: "job-00" }, { id: "job-01" }, { id: "job-02" }], next: "job-02" });
      expect(await store.list({ scan: 8, limit: 20, cursor: "job-25", now: T })).toMatchObject({ next: null });
      expect((await pages(store, { queue: "q", scan: 7, limit: 4 })).flat()).toEqual(jobs.map((job) => job.id).filter((id) => id !== "job-10"));
    });

    test("refuses a bad filter, naming it, before anything is read", async () => {
      const { store } = await world();
      const refusals: [JobFilter & { limit?: number; scan?: number }, RegExp][] = [
        [{ status: "running" as never }, /^status must be one of queued, scheduled, leased, done, dead, cancelled, got "running"$/],
        [{ status: [] }, /^status must be one or more of/],
        [{ createdFrom: T + 2, createdTo: T + 1 }, /^createdFrom must not be after createdTo/],
        [{ finishedFrom: 5, finishedTo: 4 }, /^finishedFrom must not be after finishedTo/],
        [{ finishedFrom: -1 }, /^finishedFrom must be integer milliseconds since the epoch, got -1$/],
        [{ error: "" }, /^error must be the text lastError contains, not empty$/],
        [{ error: "x".repeat(1025) }, /^error must be at most 1024 bytes of UTF-8, got 1025$/],
        [{ idPrefix: "" }, /^idPrefix must be a non-empty string/],
        [{ key: "a\u0000" }, /^key must be a non-empty string of printable text/],
        [{ queue: "" }, /^queue must be a non-empty string/],
        [{ scan: 20_001 }, /^scan must be at most 20000, got 20001$/],
      ];
      for (const [filter, message] of refusals) {
        const error = await store.list({ ...filter, now: T + 10 }).catch((caught: unknown) => caught);
        expect(error, JSON.stringify(filter)).toBeInstanceOf(InvalidArgument);
        expect((error as Error).message).toMatch(message);
      }
    });
  });

  describe("bulk", () => {
    test("retry takes the dead and the cancelled jobs that match, due at once with their attempts reset, and skips the others", async () => {
      const { store, snapshot } = await world();
      const before = await snapshot();
      const outcome = await store.bulk({ action: "retry", filter: { queue: "q", idPrefix: "c" }, now: T + 10 });
      expect(outcome.matched).toBe(2);
      expect(outcome.changed).toEqual([{ id: "c-cancelled", queue: "q", status: "queued", owner: null, until: 0 }, { id: "c-dead", queue: "q", status: "queued", owner: null, until: 0 }]);
      for (const id of ["c-cancelled", "c-dead"]) expect(await store.get(id, { now: T + 10 }), id).toMatchObject({ attempts: 0, runAt: T + 10, done: false, lastError: id === "c-dead" ? "disk full on /var" : null });
      expect(outcome).toMatchObject({ skipped: {}, next: null });
      const everything = await store.bulk({ action: "retry", now: T + 11 });
      expect(everything).toMatchObject({ matched: 8, skipped: { not_dead_or_cancelled: 7 }, next: null });
      expect(everything.changed.map((job) => job.id)).toEqual(["d-dead"]);
      const after = await snapshot();
      for (const id of ["a-queued", "a-later", "b-held", "b-done", "a-other"]) expect(after[id], id).toEqual(before[id]);
      expect((await store.events("c-dead")).items.map((event) => event.kind)).toEqual(["enqueued", "claimed", "dead", "retried"]);
      expect((await store.claimNext("q", { owner: "E", ttlMs: TTL, limit: 5, now: T + 12 })).map((lease) => [lease.job.id, lease.fence])).toEqual([
        ["a-queued", 1], ["c-cancelled", 1], ["c-dead", 2],
      ]);
    });

    test("retry of a cancelled job that was held: the old holder stays refused, and the next claim's fence is above its", async () => {
      const { store } = await world();
      await store.cancel("b-held", { by: "ops", now: T + 7 });
      const { changed } = await store.bulk({ action: "retry", filter: { idPrefix: "b-held" }, now: T + 8 });
      expect(changed).toEqual([{ id: "b-held", queue: "q", status: "queued", owner: null, until: 0 }]);
      expect(await store.get("b-held", { now: T + 8 })).toMatchObject({ fence: 1, attempts: 0 });
      expect(await noteVerbs(store).complete("b-held", "A", 1, T + 9, "late")).toBe(false); // its lease would not have ended until T + 2 + HOUR
      await expect(store.renew("b-held", { owner: "A", fence: 1, ttlMs: TTL, now: T + 9 })).rejects.toBeInstanceOf(LeaseLost);
      const [lease] = await store.claimNext("q", { owner: "E", ttlMs: TTL, limit: 1, now: T + 9 });
      expect(lease).toMatchObject({ job: { id: "a-queued" } });
      expect(await store.claim("b-held", { owner: "E", ttlMs: TTL, now: T + 9 })).toMatchObject({ fence: 2 });
      expect(await noteVerbs(store).complete("b-held", "A", 1, T + 10, "late")).toBe(false);
      expect(await noteVerbs(store).complete("b-held", "E", 2, T + 10, "ok")).toBe(true);
      const kinds = (await store.events("b-held", { limit: 100 })).items.map((event) => [event.kind, event.owner, event.fence]);
      expect(kinds).toEqual([
        ["enqueued", null, null], ["claimed", "A", 1], ["cancelled", "ops", 1], ["retried", "A", 1], ["refused", "A", 1], ["refused", "A", 1], ["claimed", "E", 2], ["refused", "A", 1], ["completed", "E", 2],
      ]);
    });

    test("cancel takes the queued, scheduled and leased jobs that match; their holders' writes are refused from then on, reason cancelled", async () => {
      const { store, snapshot } = await world();
      await store.claim("a-other", { owner: "F", ttlMs: HOUR, now: T + 7 });
      const before = await snapshot();
      const outcome = await store.bulk({ action: "cancel", by: "ops", reason: "bad deploy", now: T + 10 });
      expect(outcome).toMatchObject({ matched: 8, skipped: { already_finished: 4 }, next: null });
      expect(outcome.changed.map((job) => [job.id, job.status, job.owner])).toEqual([["a-later", "cancelled", null], ["a-other", "cancelled", "F"], ["a-queued", "cancelled", null], ["b-held", "cancelled", "A"]]);
      const after = await snapshot();
      for (const id of ["b-done", "c-dead", "c-cancelled", "d-dead"]) expect(after[id], id).toEqual(before[id]);
      for (const [id, owner, fence] of [["b-held", "A", 1], ["a-other", "F", 1]] as const) {
        const refused = await store.complete(id, { owner, fence, result: "late", now: T + 11 }).catch((caught: unknown) => caught);
        expect(refused).toBeInstanceOf(LeaseLost);
        expect(refused).toMatchObject({ reason: "cancelled", currentFence: fence });
        expect((await store.events(id)).items.filter((event) => event.kind === "cancelled")).toEqual([expect.objectContaining({ owner: "ops", error: "bad deploy", fence, at: T + 10 })]);
      }
      expect(await store.claimNext("q", { owner: "E", ttlMs: TTL, limit: 5, now: T + 2 * HOUR })).toEqual([]);
      expect((await store.stats({ now: T + 12 })).find((queue) => queue.queue === "q")).toMatchObject({ jobs: { cancelled: 4 } });
    });

    test("delete takes the finished jobs that match, keeping their history's end and their fence, and skips the others", async () => {
      const { store, snapshot, rows } = await world();
      const before = await snapshot();
      const outcome = await store.bulk({ action: "delete", filter: { queue: "q" }, now: T + 10 });
      expect(outcome).toMatchObject({ matched: 6, skipped: { not_finished: 3 }, next: null });
      expect(outcome.changed.map((job) => [job.id, job.status])).toEqual([["b-done", "done"], ["c-cancelled", "cancelled"], ["c-dead", "dead"]]);
      const after = await snapshot();
      expect(Object.keys(after)).toEqual(["a-later", "a-other", "a-queued", "b-held", "d-dead"]);
      for (const id of Object.keys(after)) expect(after[id], id).toEqual(before[id]);
      expect((await store.events("c-dead")).items.map((event) => event.kind)).toEqual(["enqueued", "claimed", "dead", "deleted"]);
      expect(await rows("SELECT fence FROM fence_floor")).toEqual([{ fence: 1 }]);
      expect((await store.enqueue("b-done", { queue: "q", now: T + 11 })).job.fence).toBe(1); // a new job of that id starts at the floor
      expect((await store.stats({ now: T + 12 })).find((queue) => queue.queue === "q")).toMatchObject({ jobs: { done: 0, dead: 0, cancelled: 0 } });
    });

    test("acts on up to `limit` jobs in chunks, its cursor where the next call goes on; a dry run counts and changes nothing", async () => {
      const { store, snapshot } = await freshStore();
      const jobs = Array.from({ length: 1_200 }, (_, i) => ({ id: `job-${String(i).padStart(4, "0")}` }));
      await store.enqueueMany("q", { jobs: jobs.slice(0, 1_000), now: T });
      await store.enqueueMany("q", { jobs: jobs.slice(1_000), now: T });
      await store.enqueue("other", { queue: "elsewhere", now: T });
      const before = await snapshot();
      expect(await store.bulk({ action: "cancel", filter: { queue: "q" }, dryRun: true, limit: 10_000, now: T + 1 })).toEqual({ matched: 1_200, changed: [], skipped: {}, next: null });
      expect(await snapshot()).toEqual(before);
      const first = await store.bulk({ action: "cancel", filter: { queue: "q", status: "queued" }, limit: 700, now: T + 1 });
      expect(first).toMatchObject({ matched: 700, skipped: {}, next: "job-0699" });
      expect(first.changed).toHaveLength(700);
      const rest = await store.bulk({ action: "cancel", filter: { queue: "q", status: "queued" }, cursor: first.next!, now: T + 2 });
      expect(rest).toMatchObject({ matched: 500, skipped: {}, next: null });
      expect(rest.changed[0]).toMatchObject({ id: "job-0700" });
      expect((await store.list({ queue: "q", status: "queued", now: T + 3 })).items).toEqual([]);
      expect((await store.get("other", { now: T + 3 })).status).toBe("queued");
    });

    test("a token's queues: only their jobs are read and acted on", async () => {
      const { store, snapshot } = await world();
      const before = await snapshot();
      const outcome = await store.bulk({ action: "cancel", queues: ["oth*"], now: T + 10 });
      expect(outcome).toMatchObject({ matched: 2, skipped: { already_finished: 1 }, next: null });
      expect(outcome.changed.map((job) => job.id)).toEqual(["a-other"]);
      expect((await snapshot())["a-queued"]).toEqual(before["a-queued"]);
      expect(await store.bulk({ action: "delete", filter: { queue: "q" }, queues: ["other"], now: T + 10 })).toEqual({ matched: 0, changed: [], skipped: {}, next: null });
    });

    test("refuses a bad request before anything changes", async () => {
      const { store, snapshot } = await world();
      const before = await snapshot();
      const refusals: [Parameters<LeaseStore["bulk"]>[0], RegExp][] = [
        [{ action: "purge" as never }, /^action must be one of retry, cancel, delete, got "purge"$/],
        [{ action: "retry", limit: 10_001 }, /^limit must be at most 10000, got 10001/],
        [{ action: "retry", limit: 0 }, /^limit must be a positive safe integer, got 0$/],
        [{ action: "cancel", reason: "x".repeat(1025) }, /^reason must be at most 1024 bytes/],
        [{ action: "cancel", by: "" }, /^by must be a non-empty string/],
        [{ action: "delete", filter: { createdFrom: 2, createdTo: 1 } }, /^createdFrom must not be after createdTo/],
        [{ action: "delete", dryRun: "yes" as never }, /^dryRun must be true or false/],
        [{ action: "delete", cursor: "" }, /^cursor must be a non-empty string/],
      ];
      for (const [request, message] of refusals) {
        const error = await store.bulk({ ...request, now: T + 10 }).catch((caught: unknown) => caught);
        expect(error, JSON.stringify(request)).toBeInstanceOf(InvalidArgument);
        expect((error as Error).message).toMatch(message);
      }
      expect(await snapshot()).toEqual(before);
    });
  });
}
