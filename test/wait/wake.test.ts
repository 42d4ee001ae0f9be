import { expect, test } from "vitest";
import { wakeWith } from "../../src/wait/wake.ts";
import type { Waits } from "../../src/wait/long-poll.ts";
import { freshStore } from "../fresh-db.ts";

// What the app's writes tell the waiters (src/http/wake.ts), read from the
// jobs as a real store answers them. A Durable Object doorbell (D1 mode)
// wakes nobody when a lease ends, so the ring or the timer that `settled`
// chooses is all its waiting claims hear of a release.

const HOUR = 3_600_000;
const T = Date.UTC(2026, 0, 1, 12);
const TTL = 30_000;

/** Waits that keep what they were told, in order; nothing waits in them. */
function told(): { heard: unknown[][]; waits: Waits } {
  const heard: unknown[][] = [];
  const never = () => Promise.reject(new Error("nothing waits here"));
  return {
    heard,
    waits: {
      claimNext: never,
      job: never,
      claimable: (...args) => void heard.push(["claimable", ...args]),
      finished: (ids) => void heard.push(["finished", ids]),
      ended: (...args) => void heard.push(["ended", ...args]),
    },
  };
}

test("a release rings its queue when the job is due, though its runAt is ahead of a clock that stepped back; a retry's backoff sets the timer", async () => {
  const { store } = await freshStore();
  await store.enqueue("ahead", { queue: "q", maxAttempts: 5, now: T + HOUR }); // enqueued on a clock an hour ahead
  const { heard, waits } = told();

  await store.claim("ahead", { owner: "A", ttlMs: TTL, now: T });
  const released = await store.release("ahead", { owner: "A", fence: 1, now: T + 1 });
  expect(released).toMatchObject({ status: "queued", runAt: T + HOUR });
  await wakeWith(waits).settled(released, "A");
  expect(heard).toEqual([["claimable", "q", 1]]);

  heard.length = 0;
  await store.claim("ahead", { owner: "B", ttlMs: TTL, now: T + 2 });
  const { job: failed } = await store.fail("ahead", { owner: "B", fence: 2, error: "later", retryInMs: 1_000, now: T + 3 });
  expect(failed).toMatchObject({ status: "scheduled", runAt: T + 1_003 });
  await wakeWith(waits).settled(failed, "B");
  expect(heard).toEqual([["ended", "q", "B"], ["claimable", "q", 0, T + 1_003]]);
});
