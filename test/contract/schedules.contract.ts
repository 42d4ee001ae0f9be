import { describe, expect, test } from "vitest";
import { InvalidArgument, NotFound, ScheduleNameTaken } from "../../src/store/errors.ts";
import type { ScheduleSpec } from "../../src/store/schedules.ts";
import type { FreshStore } from "./store.contract.ts";
import { noteVerbs } from "../../src/store/note.ts";

// The recurring schedules of migrations/0011, run against every driver as the
// store contract is. Each test starts on a fresh, empty database; the clock is
// the `now` handed to each call.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const T = Date.UTC(2026, 10, 30, 2, 59, 30); // 2026-11-30T02:59:30Z, half a minute before 03:00
const AT_3 = Date.UTC(2026, 10, 30, 3, 0, 0);

const nightly: ScheduleSpec = { queue: "reports", cron: "0 3 * * *", payload: { kind: "nightly" }, priority: 2, maxAttempts: 3 };

/** Registers the schedules' contract for one driver. */
export function schedulesContract(freshStore: () => Promise<FreshStore>): void {
  describe("schedules: firing", () => {
    test("a cron fires at its exact minute: nothing 1 ms before, then one job with the id {name}@{ISO time}, and not again", async () => {
      const { store, snapshot } = await freshStore();
      const { created, schedule } = await store.schedules.put("nightly", { ...nightly, now: T });
      expect(created).toBe(true);
      expect(schedule).toEqual({
        name: "nightly", queue: "reports", cron: "0 3 * * *", everyMs: null, timezone: "UTC", payload: { kind: "nightly" }, key: null,
        priority: 2, maxAttempts: 3, nextFireAt: AT_3, lastFireAt: null, lastFireTaken: false, createdAt: T, updatedAt: T,
      });

      expect(await store.schedules.fireDue({ now: AT_3 - 1 })).toEqual({ jobs: [], taken: [], skipped: [], nextFireAt: AT_3 });
      expect(await snapshot()).toEqual({});

      const fired = await store.schedules.fireDue({ now: AT_3 });
      expect(fired).toEqual({ jobs: [{ id: "nightly@2026-11-30T03:00:00.000Z", queue: "reports" }], taken: [], skipped: [], nextFireAt: AT_3 + 24 * HOUR });
      expect(await store.get("nightly@2026-11-30T03:00:00.000Z", { now: AT_3 })).toMatchObject({
        queue: "reports", payload: { kind: "nightly" }, priority: 2, maxAttempts: 3, runAt: AT_3, status: "queued", fence: 0, createdAt: AT_3,
      });
      expect(await store.schedules.get("nightly")).toMatchObject({ lastFireAt: AT_3, nextFireAt: AT_3 + 24 * HOUR, updatedAt: T });

      expect(await store.schedules.fireDue({ now: AT_3 + MINUTE })).toEqual({ jobs: [], taken: [], skipped: [], nextFireAt: AT_3 + 24 * HOUR });
      expect(Object.keys(await snapshot())).toEqual(["nightly@2026-11-30T03:00:00.000Z"]);
    });

    test("after an hour down, a per-minute cron enqueues one job, for the latest minute at or before now, not 60", async () => {
      const { store, snapshot } = await freshStore();
      await store.schedules.put("tick", { queue: "q", cron: "* * * * *", now: T });
      const back = AT_3 + HOUR + 30_000; // 04:00:30
      const fired = await store.schedules.fireDue({ now: back });
      expect(fired).toEqual({ jobs: [{ id: "tick@2026-11-30T04:00:00.000Z", queue: "q" }], taken: [], skipped: [], nextFireAt: AT_3 + HOUR + MINUTE });
      expect(Object.keys(await snapshot())).toEqual(["tick@2026-11-30T04:00:00.000Z"]);
      expect(await store.schedules.get("tick")).toMatchObject({ lastFireAt: AT_3 + HOUR, nextFireAt: AT_3 + HOUR + MINUTE });
    });

    test("two runners firing at the same instant enqueue the fire once", async () => {
      const { store, snapshot, reopen } = await freshStore();
      const other = await reopen();
      await store.schedules.put("tick", { queue: "q", cron: "* * * * *", now: T });
      await store.schedules.put("nightly", { ...nightly, now: T });
      const answers = await Promise.all([store.schedules.fireDue({ now: AT_3 }), other.schedules.fireDue({ now: AT_3 })]);
      const ids = answers.flatMap((answer) => answer.jobs.map((job) => job.id)).sort();
      expect(ids).toEqual(["nightly@2026-11-30T03:00:00.000Z", "tick@2026-11-30T03:00:00.000Z"]);
      expect(Object.keys(await snapshot())).toEqual(ids);
      expect((await store.schedules.list()).map((s) => [s.name, s.lastFireAt])).toEqual([["nightly", AT_3], ["tick", AT_3]]);
    });

    test("a cron in Europe/Paris fires at its local time: 09:00 is 08:00Z in winter and 07:00Z after the change to summer time", async () => {
      const { store } = await freshStore();
      const before = Date.UTC(2026, 2, 28, 0, 0); // 2026-03-28, the day before Paris moves to summer time
      const { schedule } = await store.schedules.put("paris", { queue: "q", cron: "0 9 * * *", timezone: "Europe/Paris", now: before });
      expect(schedule).toMatchObject({ timezone: "Europe/Paris", nextFireAt: Date.UTC(2026, 2, 28, 8, 0) });
      expect((await store.schedules.fireDue({ now: Date.UTC(2026, 2, 28, 8, 0) - 1 })).jobs).toEqual([]);
      expect(await store.schedules.fireDue({ now: Date.UTC(2026, 2, 28, 8, 0) })).toEqual({
        jobs: [{ id: "paris@2026-03-28T08:00:00.000Z", queue: "q" }], taken: [], skipped: [], nextFireAt: Date.UTC(2026, 2, 29, 7, 0),
      });
      expect((await store.schedules.fireDue({ now: Date.UTC(2026, 2, 29, 7, 0) })).jobs).toEqual([{ id: "paris@2026-03-29T07:00:00.000Z", queue: "q" }]);
    });

    test("everyMs fires at createdAt + k × everyMs, and after downtime only at the latest k", async () => {
      const { store, snapshot } = await freshStore();
      const { schedule } = await store.schedules.put("beat", { queue: "q", everyMs: 90_000, payload: [1], now: T });
      expect(schedule).toMatchObject({ cron: null, everyMs: 90_000, timezone: null, nextFireAt: T + 90_000 });
      expect((await store.schedules.fireDue({ now: T + 89_999 })).jobs).toEqual([]);
      expect(await store.schedules.fireDue({ now: T + 90_000 })).toEqual({ jobs: [{ id: `beat@${new Date(T + 90_000).toISOString()}`, queue: "q" }], taken: [], skipped: [], nextFireAt: T + 180_000 });
      // Down from T + 90 s to T + 905 s: the fires at 180 s … 900 s were missed; only 900 s is enqueued.
      expect(await store.schedules.fireDue({ now: T + 905_000 })).toEqual({ jobs: [{ id: `beat@${new Date(T + 900_000).toISOString()}`, queue: "q" }], taken: [], skipped: [], nextFireAt: T + 990_000 });
      expect(Object.keys(await snapshot())).toHaveLength(2);
      expect(await store.get(`beat@${new Date(T + 900_000).toISOString()}`, { now: T + 905_000 })).toMatchObject({ runAt: T + 900_000, payload: [1] });
    });

    test("a fire whose job id is taken (by a job of that id from before such ids were refused) enqueues nothing, and says so in fireDue's answer and on the schedule", async () => {
      const { store, snapshot, exec } = await freshStore();
      await store.schedules.put("nightly", { ...nightly, now: T });
      await exec(`INSERT INTO jobs (id, queue, created_at, updated_at) VALUES ('nightly@2026-11-30T03:00:00.000Z', 'elsewhere', ${T}, ${T})`);
      const before = await snapshot();
      expect(await store.schedules.fireDue({ now: AT_3 })).toEqual({
        jobs: [], taken: [{ name: "nightly", id: "nightly@2026-11-30T03:00:00.000Z" }], skipped: [], nextFireAt: AT_3 + 24 * HOUR,
      });
      expect(await snapshot()).toEqual(before);
      expect(await store.schedules.get("nightly")).toMatchObject({ lastFireAt: AT_3, lastFireTaken: true, nextFireAt: AT_3 + 24 * HOUR });
      expect(await store.schedules.fireDue({ now: AT_3 + 24 * HOUR })).toEqual({
        jobs: [{ id: "nightly@2026-12-01T03:00:00.000Z", queue: "reports" }], taken: [], skipped: [], nextFireAt: AT_3 + 48 * HOUR,
      });
      expect(await store.schedules.get("nightly")).toMatchObject({ lastFireAt: AT_3 + 24 * HOUR, lastFireTaken: false });
    });

    test("a schedule's key goes on every job it fires, held back and given a turn as enqueueMany would: fires of one key in one run count one after another", async () => {
      const { store, snapshot } = await freshStore();
      const fireAt = T + MINUTE;
      for (const queue of ["fired", "enqueued"]) {
        await store.queues.set(queue, { maxLeasedPerKey: 1, fairByKey: true, now: T });
        await store.enqueue(`${queue}-first`, { queue, key: "t", now: T }); // the key's open job, let in
      }
      for (const [name, key] of [["a", "t"], ["b", "t"], ["c", null], ["d", "u"]] as const) await store.schedules.put(name, { queue: "fired", everyMs: MINUTE, key, now: T });
      expect(await store.schedules.get("a")).toMatchObject({ key: "t" });
      expect((await store.schedules.fireDue({ now: fireAt })).jobs).toHaveLength(4);
      await store.enqueueMany("enqueued", { jobs: [{ id: "a", key: "t", runAt: fireAt }, { id: "b", key: "t", runAt: fireAt }, { id: "c", runAt: fireAt }, { id: "d", key: "u", runAt: fireAt }], now: fireAt });

      const rows = await snapshot();
      const at = new Date(fireAt).toISOString();
      // place orders the jobs of one enqueueMany; fires are one a schedule, in the order of their ids, which is their names'.
      const asJob = (row: Record<string, unknown>) => Object.fromEntries(Object.entries(row).filter(([column]) => !["id", "queue", "seq", "enqueued_seq", "place"].includes(column)));
      for (const name of ["a", "b", "c", "d"]) expect(asJob(rows[`${name}@${at}`]!), name).toEqual(asJob(rows[name]!));
      expect(["a", "b", "c", "d"].map((name) => [rows[`${name}@${at}`]!.key, rows[`${name}@${at}`]!.held_back])).toEqual([["t", 1], ["t", 1], [null, 0], ["u", 0]]);
    });

    test("an enqueue of an id shaped as a schedule's fire ({name}@{ISO time}) is InvalidArgument and changes nothing, so no client can take a fire's place", async () => {
      const { store, snapshot } = await freshStore();
      await store.schedules.put("nightly", { ...nightly, now: T });
      const fireId = "nightly@2026-11-30T03:00:00.000Z";
      for (const id of [fireId, "not-yet-a-schedule@2026-11-30T03:00:00.000Z", "x@+275760-09-13T00:00:00.000Z"]) {
        const enqueue = store.enqueue(id, { queue: "elsewhere", now: T });
        await expect(enqueue, id).rejects.toBeInstanceOf(InvalidArgument);
        await expect(enqueue).rejects.toThrow(`id ${JSON.stringify(id)} has the shape of a schedule's fire`);
      }
      await expect(noteVerbs(store).enqueue(fireId, { now: T })).rejects.toBeInstanceOf(InvalidArgument);
      const many = store.enqueueMany("elsewhere", { jobs: [{ id: "fine" }, { id: fireId }], now: T });
      await expect(many).rejects.toBeInstanceOf(InvalidArgument);
      await expect(many).rejects.toThrow(/^jobs\[1\]\.id "nightly@2026-11-30T03:00:00\.000Z" has the shape of a schedule's fire/);
      expect(await snapshot()).toEqual({});
      // Ids with an "@" of any other shape are a client's to use.
      for (const id of ["a@b", "nightly@2026-11-30", "nightly@2026-11-30T03:00:00Z", "a@b@2026-11-30T03:00:00.000Z", "@2026-11-30T03:00:00.000Z", "nightly@2026-11-30T03:00:00.000Z.bak"]) {
        expect((await store.enqueue(id, { now: T })).created, id).toBe(true);
      }
      expect((await store.schedules.fireDue({ now: AT_3 })).jobs).toEqual([{ id: fireId, queue: "reports" }]);
    });

    test("a run works through the due schedules in chunks, earliest first, and the next run takes the rest", async () => {
      const { store } = await freshStore();
      for (const [name, cron] of [["a", "0 3 * * *"], ["b", "59 2 * * *"], ["c", "0 3 * * *"]]) await store.schedules.put(name!, { queue: "q", cron: cron!, now: T - MINUTE });
      const first = await store.schedules.fireDue({ now: AT_3, chunkSize: 2, maxChunks: 1 });
      expect(first.jobs.map((job) => job.id)).toEqual(["b@2026-11-30T02:59:00.000Z", "a@2026-11-30T03:00:00.000Z"]);
      expect(first.nextFireAt).toBe(AT_3); // c is still due
      expect((await store.schedules.fireDue({ now: AT_3, chunkSize: 2 })).jobs.map((job) => job.id)).toEqual(["c@2026-11-30T03:00:00.000Z"]);
    });

    test("a schedule whose stored time zone this runtime cannot read is skipped and named, left as it is, and the others fire", async () => {
      const { store, exec } = await freshStore();
      for (const name of ["a", "b", "c"]) await store.schedules.put(name, { queue: "q", cron: "0 3 * * *", now: T });
      await exec("UPDATE schedules SET timezone = 'Mars/Olympus_Mons' WHERE name = 'a'"); // stored by another runtime
      const before = await store.schedules.get("a");
      const fired = await store.schedules.fireDue({ now: AT_3, chunkSize: 1 });
      expect(fired.jobs.map((job) => job.id)).toEqual(["b@2026-11-30T03:00:00.000Z", "c@2026-11-30T03:00:00.000Z"]);
      expect(fired.skipped).toEqual([{ name: "a", error: expect.stringContaining("Mars/Olympus_Mons") }]);
      expect(fired.nextFireAt).toBe(AT_3 + 24 * HOUR); // b's and c's next, not a's, which is still due
      expect(await store.schedules.get("a")).toEqual(before);
    });
    test("a stored cron in which this croner finds no fire (stored by another version) fires the fire it had planned, once, and then has none", async () => {
      const { store, exec, snapshot } = await freshStore();
      await store.schedules.put("leap", { queue: "q", cron: "0 3 * * *", now: T });
      await exec("UPDATE schedules SET cron = '0 3 30 2 *' WHERE name = 'leap'"); // February 30th: no fire before now, none after
      expect(await store.schedules.fireDue({ now: AT_3 })).toEqual({ jobs: [{ id: "leap@2026-11-30T03:00:00.000Z", queue: "q" }], taken: [], skipped: [], nextFireAt: null });
      expect(await store.schedules.get("leap")).toMatchObject({ lastFireAt: AT_3, nextFireAt: null });
      expect(await store.schedules.fireDue({ now: AT_3 + 24 * HOUR })).toEqual({ jobs: [], taken: [], skipped: [], nextFireAt: null });
      expect(Object.keys(await snapshot())).toEqual(["leap@2026-11-30T03:00:00.000Z"]);
    });

    test("a cron's last fire before the year 3000 (croner reads no further) is enqueued, and then it has no next fire; after a step back it is planned again and finds its job there", async () => {
      const { store, snapshot } = await freshStore();
      const LAST = Date.UTC(2999, 0, 1);
      expect((await store.schedules.put("millennium", { queue: "q", cron: "0 0 1 1 *", now: LAST - HOUR })).schedule.nextFireAt).toBe(LAST);
      expect(await store.schedules.fireDue({ now: LAST })).toEqual({ jobs: [{ id: "millennium@2999-01-01T00:00:00.000Z", queue: "q" }], taken: [], skipped: [], nextFireAt: null });
      expect(await store.schedules.get("millennium")).toMatchObject({ lastFireAt: LAST, nextFireAt: null });
      expect(await store.schedules.fireDue({ now: LAST + 24 * HOUR })).toEqual({ jobs: [], taken: [], skipped: [], nextFireAt: null });
      // The clock steps back a minute behind the fire it planned from: no fire is due (none is planned), the last one is planned again.
      expect(await store.schedules.fireDue({ now: LAST - MINUTE })).toEqual({ jobs: [], taken: [], skipped: [], nextFireAt: LAST });
      expect(await store.schedules.get("millennium")).toMatchObject({ lastFireAt: LAST, nextFireAt: LAST });
      expect(await store.schedules.fireDue({ now: LAST + MINUTE })).toEqual({ jobs: [], taken: [{ name: "millennium", id: "millennium@2999-01-01T00:00:00.000Z" }], skipped: [], nextFireAt: null });
      expect(Object.keys(await snapshot())).toEqual(["millennium@2999-01-01T00:00:00.000Z"]);
    });
  });

  describe("schedules: a clock that steps", () => {
    const at = (time: number) => new Date(time).toISOString();

    test("after a step back of an hour, a per-minute cron fires at its next minute by the corrected clock, and a fire already enqueued is not enqueued again", async () => {
      const { store, snapshot } = await freshStore();
      await store.schedules.put("tick", { queue: "q", cron: "* * * * *", now: T });
      // The clock jumps an hour ahead (only the latest missed fire, 04:00), then an NTP correction puts it back.
      expect((await store.schedules.fireDue({ now: AT_3 + HOUR + 30_000 })).jobs).toEqual([{ id: `tick@${at(AT_3 + HOUR)}`, queue: "q" }]);
      const back = await store.schedules.fireDue({ now: AT_3 + 30_000 });
      expect(back).toMatchObject({ jobs: [], nextFireAt: AT_3 + MINUTE });
      expect(await store.schedules.get("tick")).toMatchObject({ nextFireAt: AT_3 + MINUTE, lastFireAt: AT_3 + HOUR });
      expect((await store.schedules.fireDue({ now: AT_3 + MINUTE })).jobs).toEqual([{ id: `tick@${at(AT_3 + MINUTE)}`, queue: "q" }]);
      expect((await store.schedules.fireDue({ now: AT_3 + 2 * MINUTE })).jobs).toEqual([{ id: `tick@${at(AT_3 + 2 * MINUTE)}`, queue: "q" }]);
      // 04:00 comes round again: its job exists, so nothing is enqueued twice; then 04:01 fires as usual.
      expect(await store.schedules.fireDue({ now: AT_3 + HOUR })).toMatchObject({ jobs: [], taken: [{ name: "tick", id: `tick@${at(AT_3 + HOUR)}` }] });
      expect((await store.schedules.fireDue({ now: AT_3 + HOUR + MINUTE })).jobs).toEqual([{ id: `tick@${at(AT_3 + HOUR + MINUTE)}`, queue: "q" }]);
      expect(Object.keys(await snapshot())).toEqual([AT_3 + MINUTE, AT_3 + 2 * MINUTE, AT_3 + HOUR, AT_3 + HOUR + MINUTE].map((time) => `tick@${at(time)}`));
    });

    test("after a step back, an everyMs schedule fires at its next createdAt + k × everyMs by the corrected clock", async () => {
      const { store } = await freshStore();
      await store.schedules.put("beat", { queue: "q", everyMs: MINUTE, now: T });
      expect((await store.schedules.fireDue({ now: T + 10 * MINUTE })).jobs).toEqual([{ id: `beat@${at(T + 10 * MINUTE)}`, queue: "q" }]);
      expect(await store.schedules.fireDue({ now: T + 2 * MINUTE + 1_000 })).toMatchObject({ jobs: [], nextFireAt: T + 3 * MINUTE });
      expect((await store.schedules.fireDue({ now: T + 3 * MINUTE })).jobs).toEqual([{ id: `beat@${at(T + 3 * MINUTE)}`, queue: "q" }]);
    });

    test("a schedule put while the clock was an hour ahead fires at its first time by the corrected clock", async () => {
      const { store } = await freshStore();
      await store.schedules.put("tick", { queue: "q", cron: "* * * * *", now: AT_3 + HOUR + 30_000 });
      expect(await store.schedules.fireDue({ now: AT_3 + 30_000 })).toMatchObject({ jobs: [], nextFireAt: AT_3 + MINUTE });
      expect((await store.schedules.fireDue({ now: AT_3 + MINUTE })).jobs).toEqual([{ id: `tick@${at(AT_3 + MINUTE)}`, queue: "q" }]);
    });

    test("after a step back of half a second of the clock that planned it, a schedule plans again from the corrected clock, and the fire done is not enqueued twice", async () => {
      const { store, snapshot } = await freshStore();
      await store.schedules.put("tick", { queue: "q", cron: "* * * * *", now: T });
      expect((await store.schedules.fireDue({ now: AT_3 + 100 })).jobs).toEqual([{ id: `tick@${at(AT_3)}`, queue: "q" }]);
      // The same store's clock, 500 ms back: 03:00 is its next fire again, and its job exists.
      expect(await store.schedules.fireDue({ now: AT_3 - 400 })).toMatchObject({ jobs: [], taken: [], nextFireAt: AT_3 });
      expect(await store.schedules.fireDue({ now: AT_3 })).toMatchObject({ jobs: [], taken: [{ name: "tick", id: `tick@${at(AT_3)}` }], nextFireAt: AT_3 + MINUTE });
      expect((await store.schedules.fireDue({ now: AT_3 + MINUTE })).jobs).toEqual([{ id: `tick@${at(AT_3 + MINUTE)}`, queue: "q" }]);
      expect(Object.keys(await snapshot())).toEqual([`tick@${at(AT_3)}`, `tick@${at(AT_3 + MINUTE)}`]);
    });

    test("a runner whose clock is behind another's, by up to ten minutes, leaves the schedule as the runner ahead moved it", async () => {
      for (const behindMs of [500, 9 * MINUTE]) {
        const { store, reopen } = await freshStore();
        const behind = await reopen();
        await store.schedules.put("tick", { queue: "q", cron: "* * * * *", now: T });
        expect((await store.schedules.fireDue({ now: AT_3 + 100 })).jobs).toHaveLength(1);
        const moved = await store.schedules.get("tick");
        expect(await behind.schedules.fireDue({ now: AT_3 + 100 - behindMs })).toMatchObject({ jobs: [], taken: [], nextFireAt: AT_3 + MINUTE });
        expect(await store.schedules.get("tick")).toEqual(moved);
      }
    });

    test("two servers whose clocks differ by 2 s or 9 minutes, each firing every 5 s, enqueue each fire once, in order, and report no fire as taken", async () => {
      for (const skewMs of [2_000, 9 * MINUTE]) {
        const { store, reopen } = await freshStore();
        const other = await reopen();
        await store.schedules.put("tick", { queue: "q", everyMs: MINUTE, now: T });
        const fired: string[] = [];
        const taken: string[] = [];
        for (let s = 0; s <= 180; s += 5) {
          for (const fire of [await store.schedules.fireDue({ now: T + s * 1_000 }), await other.schedules.fireDue({ now: T + s * 1_000 - skewMs })]) {
            fired.push(...fire.jobs.map((job) => `${s}:${job.id}`));
            taken.push(...fire.taken.map((job) => job.id));
          }
        }
        expect(fired).toEqual([1, 2, 3].map((k) => `${60 * k}:tick@${at(T + k * MINUTE)}`));
        expect({ taken, lastFireTaken: (await store.schedules.get("tick")).lastFireTaken }).toEqual({ taken: [], lastFireTaken: false });
      }
    });

    test("a runner more than ten minutes behind another clock's plan takes that clock for broken, and plans again from its own", async () => {
      const { store, reopen } = await freshStore();
      const behind = await reopen();
      await store.schedules.put("tick", { queue: "q", cron: "* * * * *", now: AT_3 + HOUR + 30_000 });
      expect(await behind.schedules.fireDue({ now: AT_3 + HOUR + 30_000 - 10 * MINUTE - 1 })).toMatchObject({ jobs: [], nextFireAt: AT_3 + 51 * MINUTE });
      expect((await behind.schedules.fireDue({ now: AT_3 + 51 * MINUTE })).jobs).toEqual([{ id: `tick@${at(AT_3 + 51 * MINUTE)}`, queue: "q" }]);
    });

    test("a step forward of a day enqueues the latest missed fire only", async () => {
      const { store, snapshot } = await freshStore();
      await store.schedules.put("tick", { queue: "q", cron: "* * * * *", now: T });
      expect((await store.schedules.fireDue({ now: AT_3 + 24 * HOUR + 1 })).jobs).toEqual([{ id: `tick@${at(AT_3 + 24 * HOUR)}`, queue: "q" }]);
      expect(Object.keys(await snapshot())).toHaveLength(1);
    });
  });

  describe("schedules: put, replace, get, list, delete", () => {
    test("a put of an existing name replaces it: created false, createdAt and lastFireAt kept, the next fire recomputed, the next job as replaced", async () => {
      const { store } = await freshStore();
      await store.schedules.put("nightly", { ...nightly, now: T });
      await store.schedules.fireDue({ now: AT_3 });
      const replaced = await store.schedules.put("nightly", { queue: "other", cron: "30 * * * *", payload: "new", now: AT_3 + MINUTE });
      expect(replaced).toEqual({
        created: false,
        schedule: {
          name: "nightly", queue: "other", cron: "30 * * * *", everyMs: null, timezone: "UTC", payload: "new", key: null, priority: 0, maxAttempts: 25,
          nextFireAt: AT_3 + 30 * MINUTE, lastFireAt: AT_3, lastFireTaken: false, createdAt: T, updatedAt: AT_3 + MINUTE,
        },
      });
      expect((await store.schedules.fireDue({ now: AT_3 + 30 * MINUTE })).jobs).toEqual([{ id: "nightly@2026-11-30T03:30:00.000Z", queue: "other" }]);
      expect(await store.get("nightly@2026-11-30T03:30:00.000Z", { now: AT_3 + 30 * MINUTE })).toMatchObject({ payload: "new", priority: 0, maxAttempts: 25 });
    });

    test("a put replacing a given queue writes only while the name is that queue's (null: nobody's): else ScheduleNameTaken, and the schedule stays as it was", async () => {
      const { store } = await freshStore();
      await store.schedules.put("nightly", { ...nightly, now: T });
      const before = await store.schedules.get("nightly");
      for (const replacing of [null, "other"]) {
        await expect(store.schedules.put("nightly", { queue: "other", everyMs: HOUR, replacing, now: T + 1 })).rejects.toThrow(ScheduleNameTaken);
      }
      expect(await store.schedules.get("nightly")).toEqual(before);
      expect(await store.schedules.put("nightly", { queue: "other", everyMs: HOUR, replacing: nightly.queue, now: T + 1 })).toMatchObject({ created: false, schedule: { queue: "other", everyMs: HOUR } });
      expect(await store.schedules.put("fresh", { queue: "q", everyMs: HOUR, replacing: null, now: T + 1 })).toMatchObject({ created: true, schedule: { queue: "q" } });
    });

    test("a replace with everyMs keeps its anchor: the next fire is createdAt + k × everyMs, the first after now", async () => {
      const { store } = await freshStore();
      await store.schedules.put("beat", { queue: "q", everyMs: 90_000, now: T });
      const { schedule } = await store.schedules.put("beat", { queue: "q", everyMs: 60_000, now: T + 950_000 });
      expect(schedule).toMatchObject({ everyMs: 60_000, createdAt: T, nextFireAt: T + 960_000 });
    });

    test("a replace that keeps the timing keeps a due fire: a deploy that puts its schedules again after downtime loses no fire", async () => {
      const { store } = await freshStore();
      await store.schedules.put("nightly", { ...nightly, now: T });
      await store.schedules.put("beat", { queue: "q", everyMs: HOUR, now: T });
      const later = AT_3 + 5 * MINUTE; // both due (03:00 and T + 1 h), neither fired yet
      const again = await store.schedules.put("nightly", { ...nightly, payload: { kind: "changed" }, now: later });
      expect(again.schedule).toMatchObject({ nextFireAt: AT_3, lastFireAt: null, payload: { kind: "changed" } });
      await store.schedules.put("beat", { queue: "q", everyMs: HOUR, now: T + HOUR + MINUTE });
      const fired = await store.schedules.fireDue({ now: T + HOUR + MINUTE });
      expect(fired.jobs).toEqual([{ id: "nightly@2026-11-30T03:00:00.000Z", queue: "reports" }, { id: "beat@2026-11-30T03:59:30.000Z", queue: "q" }]);
      expect(await store.get("nightly@2026-11-30T03:00:00.000Z", { now: later })).toMatchObject({ payload: { kind: "changed" } }); // the fire takes the spec as replaced
    });

    test("a deleted schedule never fires; its jobs stay; a second delete, a get and a delete of another name are NotFound", async () => {
      const { store, snapshot } = await freshStore();
      await store.schedules.put("tick", { queue: "q", cron: "* * * * *", now: T - MINUTE });
      await store.schedules.put("nightly", { ...nightly, now: T });
      await store.schedules.fireDue({ now: AT_3 - MINUTE });
      await store.schedules.delete("tick");
      expect((await store.schedules.list()).map((s) => s.name)).toEqual(["nightly"]);
      expect((await store.schedules.fireDue({ now: AT_3 + HOUR })).jobs).toEqual([{ id: "nightly@2026-11-30T03:00:00.000Z", queue: "reports" }]);
      expect(Object.keys(await snapshot())).toEqual(["nightly@2026-11-30T03:00:00.000Z", "tick@2026-11-30T02:59:00.000Z"]);
      for (const call of [() => store.schedules.delete("tick"), () => store.schedules.get("tick"), () => store.schedules.delete("never")]) {
        await expect(call()).rejects.toBeInstanceOf(NotFound);
      }
      await expect(store.schedules.get("tick")).rejects.toThrow('no schedule has the name "tick"');
    });

    test("listSchedules answers every schedule by name", async () => {
      const { store } = await freshStore();
      expect(await store.schedules.list()).toEqual([]);
      for (const name of ["b", "a", "c-1", "B"]) await store.schedules.put(name, { queue: "q", everyMs: 1_000, now: T });
      expect((await store.schedules.list()).map((s) => s.name)).toEqual(["B", "a", "b", "c-1"]);
      expect(await store.schedules.get("a")).toEqual((await store.schedules.list())[1]);
    });

    test("a bad spec or name is InvalidArgument naming the field, and changes nothing", async () => {
      const { store } = await freshStore();
      await store.schedules.put("nightly", { ...nightly, now: T });
      const before = await store.schedules.list();
      const refused: [string, ScheduleSpec, RegExp][] = [
        ["nightly", { queue: "q", cron: "61 * * * *" }, /^cron "61 \* \* \* \*" is not a cron expression \(Invalid value for minute: 61\); give five fields, minute hour day-of-month month day-of-week, e\.g\. "0 9 \* \* 1-5"$/],
        ["nightly", { queue: "q", cron: "* * * * * *" }, /^cron "\* \* \* \* \* \*" has 6 fields; give five fields, minute hour day-of-month month day-of-week, e\.g\. "0 9 \* \* 1-5"$/],
        ["nightly", { queue: "q", cron: "0" }, /^cron "0" has 1 field; give five fields/],
        ["nightly", { queue: "q", cron: "" }, /^cron must be a non-empty string/],
        ["nightly", { queue: "q", cron: 7 as never }, /^cron must be a non-empty string of printable text, got 7$/],
        ["nightly", { queue: "q", cron: "0 0 30 2 *" }, /^cron "0 0 30 2 \*" never fires/],
        ["nightly", { queue: "q", cron: "0 9 * * *", timezone: "Europe/Nowhere" }, /^timezone "Europe\/Nowhere" is not a time zone/],
        ["nightly", { queue: "q", cron: "* * * * *", everyMs: 60_000 }, /^give cron or everyMs, not both/],
        ["nightly", { queue: "q" }, /^give cron .* or everyMs/],
        ["nightly", { queue: "q", everyMs: 999 }, /^everyMs must be a whole number of ms, at least 1000/],
        ["nightly", { queue: "q", everyMs: 1_500.5 }, /^everyMs must be/],
        ["nightly", { queue: "q", everyMs: 60_000, timezone: "UTC" }, /^timezone goes with cron only/],
        ["nightly", { queue: "q", cron: "* * * * *", timezone: "" }, /^timezone must be a non-empty string/],
        ["nightly", { queue: "", cron: "* * * * *" }, /^queue must be/],
        ["nightly", { queue: "q", cron: "* * * * *", maxAttempts: 0 }, /^maxAttempts must be/],
        ["nightly", { queue: "q", cron: "* * * * *", priority: 1.5 }, /^priority must be a safe integer, got 1\.5$/],
        ["nightly", { queue: "q", cron: "* * * * *", payload: () => null }, /^payload must be a JSON value, got \(\) => null$/],
        ["a@b", { queue: "q", cron: "* * * * *" }, /^name must not contain "@"/],
        ["x".repeat(231), { queue: "q", cron: "* * * * *" }, /^name must be at most 230 bytes/],
        ["", { queue: "q", cron: "* * * * *" }, /^name must be a non-empty string/],
        [".", { queue: "q", cron: "* * * * *" }, /^name must not be "\." or "\.\.", which URLs rewrite$/],
        ["..", { queue: "q", cron: "* * * * *" }, /^name must not be "\." or "\.\.", which URLs rewrite$/],
      ];
      for (const [name, spec, message] of refused) {
        const put = store.schedules.put(name, { ...spec, now: T + 1 });
        await expect(put, `${name} ${JSON.stringify(spec)}`).rejects.toBeInstanceOf(InvalidArgument);
        await expect(put).rejects.toThrow(message);
      }
      expect(await store.schedules.list()).toEqual(before);
      expect((await store.schedules.put("x".repeat(230), { queue: "q", everyMs: 1_000, now: T })).created).toBe(true); // the longest name
      expect((await store.schedules.put("...", { queue: "q", everyMs: 1_000, now: T })).created).toBe(true); // only "." and ".." are paths
    });

    test("a bad name of get or delete, or a bad now of put or fireDue, is InvalidArgument naming it, and changes nothing", async () => {
      const { store, snapshot } = await freshStore();
      await store.schedules.put("nightly", { ...nightly, now: T });
      const before = await store.schedules.list();
      const badName = 'name must be a non-empty string of printable text, got ""';
      const badNow = "now must be integer milliseconds since the epoch, got -1";
      const refused: [string, () => Promise<unknown>, string][] = [
        ["get", () => store.schedules.get(""), badName],
        ["delete", () => store.schedules.delete(""), badName],
        ["put", () => store.schedules.put("nightly", { ...nightly, cron: "0 4 * * *", now: -1 }), badNow],
        ["fireDue", () => store.schedules.fireDue({ now: -1 }), badNow],
      ];
      for (const [verb, call, message] of refused) {
        const refusal = await call().catch((error: unknown) => error);
        expect(refusal, verb).toBeInstanceOf(InvalidArgument);
        expect((refusal as InvalidArgument).message, verb).toBe(message);
      }
      expect(await store.schedules.list()).toEqual(before);
      expect(await snapshot()).toEqual({});
    });

    test("a cron is read as croner reads it: spaces around and between its fields, and a nickname such as @daily, spaces around it too", async () => {
      const { store } = await freshStore();
      const MIDNIGHT = Date.UTC(2026, 11, 1); // the first midnight after T
      const read: [string, number][] = [[" 0 3 * * * ", AT_3], ["0  3 * * *", AT_3], ["@daily", MIDNIGHT], [" @daily ", MIDNIGHT]];
      for (const [cron, nextFireAt] of read) {
        expect((await store.schedules.put("spaced", { queue: "q", cron, now: T })).schedule, JSON.stringify(cron)).toMatchObject({ cron, nextFireAt });
      }
    });
  });
}
