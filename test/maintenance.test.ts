import { describe, expect, test } from "vitest";
import { repeat } from "../src/maintenance.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("repeat, the Node server's maintenance timer", () => {
  test("runs one at a time: a run slower than the period delays the next, never overlaps it", async () => {
    let running = 0;
    let most = 0;
    let runs = 0;
    const timer = repeat(2, async () => {
      runs++;
      most = Math.max(most, ++running);
      await sleep(25);
      running--;
    });
    await sleep(200);
    await timer.stop();
    expect(most).toBe(1);
    expect(runs).toBeGreaterThanOrEqual(3);
    expect(runs).toBeLessThanOrEqual(9); // each run waits out its 25 ms before the next one's 2 ms
  });

  test("stop aborts the run in progress, waits for it to end, and starts no other", async () => {
    const seen: string[] = [];
    const timer = repeat(1, async (signal) => {
      seen.push("start");
      while (!signal.aborted) await sleep(1);
      await sleep(10);
      seen.push("end");
    });
    await sleep(20);
    await timer.stop();
    expect(seen).toEqual(["start", "end"]);
    await sleep(20);
    expect(seen).toEqual(["start", "end"]);
  });

  test("a run that throws does not stop the next ones", async () => {
    let runs = 0;
    const timer = repeat(1, async () => {
      runs++;
      throw new Error("disk full");
    });
    await sleep(50);
    await timer.stop();
    expect(runs).toBeGreaterThanOrEqual(2);
  });
});
