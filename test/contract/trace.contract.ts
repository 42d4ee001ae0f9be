import { describe, expect, test } from "vitest";
import { InvalidArgument } from "../../src/store/errors.ts";
import type { FreshStore } from "./store.contract.ts";

// A job's W3C trace context (issue 21, migrations/0032): stored by the
// enqueue, handed back with every lease, written nowhere else. Runs on every
// driver like the store contract.

const T = 1_000_000;
const TTL = 30_000;
const PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const STATE = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
const OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

/** Registers the trace context contract for one driver. */
export function traceContract(freshStore: () => Promise<FreshStore>): void {
  describe("trace context", () => {
    test("an enqueue stores its traceparent and tracestate, and every lease of the job hands them back", async () => {
      const { store, snapshot } = await freshStore();
      const { job } = await store.enqueue("traced", { queue: "q", traceparent: PARENT, tracestate: STATE, now: T });
      expect(job).toMatchObject({ traceparent: PARENT, tracestate: STATE });
      expect((await snapshot()).traced).toMatchObject({ traceparent: PARENT, tracestate: STATE });

      const [first] = await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T });
      expect(first!.job).toMatchObject({ id: "traced", traceparent: PARENT, tracestate: STATE });
      await store.fail("traced", { owner: "A", fence: 1, error: "boom", retryInMs: 0, now: T });
      const again = await store.claim("traced", { owner: "B", ttlMs: TTL, now: T + 1 });
      expect(again.job).toMatchObject({ fence: 2, traceparent: PARENT, tracestate: STATE });
      expect(await store.get("traced", { now: T + 1 })).toMatchObject({ traceparent: PARENT, tracestate: STATE });
    });

    test("a job enqueued without one has null for both, and so do its leases", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("plain", { queue: "q", now: T });
      expect((await snapshot()).plain).toMatchObject({ traceparent: null, tracestate: null });
      const [lease] = await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T });
      expect(lease!.job).toMatchObject({ traceparent: null, tracestate: null });
    });

    test("enqueueMany stores each job's own, and the leases a completion takes next hand them back", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueueMany("q", {
        jobs: [
          { id: "a", priority: 2, traceparent: PARENT, tracestate: STATE },
          { id: "b", priority: 1, traceparent: OTHER },
          { id: "c" },
        ],
        now: T,
      });
      const rows = await snapshot();
      expect([rows.a, rows.b, rows.c].map((row) => [row!.traceparent, row!.tracestate])).toEqual([[PARENT, STATE], [OTHER, null], [null, null]]);
      const [a] = await store.claimNext("q", { owner: "W", ttlMs: TTL, now: T });
      expect(a!.job.traceparent).toBe(PARENT);
      const { leases } = await store.complete("a", { owner: "W", fence: 1, result: "1", next: { limit: 2, ttlMs: TTL }, now: T });
      expect(leases.map((lease) => [lease.job.id, lease.job.traceparent, lease.job.tracestate])).toEqual([["b", OTHER, null], ["c", null, null]]);
    });

    test("a later version is read as version 00 and stored as one; an existing id keeps the context it had", async () => {
      const { store } = await freshStore();
      const later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next";
      expect((await store.enqueue("v", { traceparent: later, now: T })).job.traceparent).toBe(PARENT);
      const again = await store.enqueue("v", { traceparent: OTHER, now: T + 1 });
      expect(again).toMatchObject({ created: false, job: { traceparent: PARENT } });
    });

    test("a retried dead job keeps its trace context: its next attempt continues the same trace", async () => {
      const { store } = await freshStore();
      await store.enqueue("once", { traceparent: PARENT, maxAttempts: 1, now: T });
      await store.claim("once", { owner: "A", ttlMs: TTL, now: T });
      await store.fail("once", { owner: "A", fence: 1, error: "boom", now: T });
      expect((await store.retry("once", { now: T + 1 })).traceparent).toBe(PARENT);
    });

    test.each([
      ["an uppercase traceparent", { traceparent: PARENT.toUpperCase() }, /traceparent must be version-traceid-parentid-flags in lowercase hex/],
      ["version ff", { traceparent: `ff${PARENT.slice(2)}` }, /traceparent has version ff/],
      ["a trace-id of zeros", { traceparent: `00-${"0".repeat(32)}-00f067aa0ba902b7-01` }, /trace-id of all zeros/],
      ["a parent-id of zeros", { traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${"0".repeat(16)}-01` }, /parent-id of all zeros/],
      ["version 00 with more after it", { traceparent: `${PARENT}-extra` }, /exactly 55 characters/],
      ["a tracestate alone", { tracestate: STATE }, /tracestate needs a traceparent/],
      ["a tracestate that is not key=value", { traceparent: PARENT, tracestate: "no equals sign" }, /tracestate has a member that is not key=value/],
      ["a tracestate with a key twice", { traceparent: PARENT, tracestate: "a=1,a=2" }, /the key "a" twice/],
      ["a tracestate over 512 characters", { traceparent: PARENT, tracestate: `a=${"x".repeat(250)},b=${"x".repeat(250)},c=${"x".repeat(10)}` }, /at most 512 characters/],
      ["a traceparent that is not a string", { traceparent: 42 as unknown as string }, /traceparent must be a string/],
    ])("refuses %s, naming it, and stores nothing", async (_, trace, message) => {
      const { store, snapshot } = await freshStore();
      await expect(store.enqueue("bad", { ...trace, now: T })).rejects.toThrow(InvalidArgument);
      await expect(store.enqueue("bad", { ...trace, now: T })).rejects.toThrow(message);
      await expect(store.enqueueMany("q", { jobs: [{ id: "fine" }, { id: "bad", ...trace }], now: T })).rejects.toThrow(/^jobs\[1\]\./);
      expect(await snapshot()).toEqual({});
    });
  });
}
