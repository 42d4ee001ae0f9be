import { expect, test } from "vitest";
import { freshStore } from "./fresh-db.ts";

const T = 1_000_000;
const TTL = 30_000;

// The design note's story: A takes the job and stalls; its lease expires; B
// takes the job and completes it; A comes back late and every write it tries
// is refused, so B's result stays.
test("a worker that stalled past its lease cannot overwrite the newer worker's result", async () => {
  const { store, snapshot } = await freshStore();
  await store.enqueue("invoice-42", { now: T });

  const fenceA = await store.claim("invoice-42", "A", T, TTL);
  expect(fenceA).toBe(1);

  const fenceB = await store.claim("invoice-42", "B", T + TTL, TTL);
  expect(fenceB).toBe(2);
  expect(await store.complete("invoice-42", "B", 2, T + TTL + 10, "paid by B")).toBe(true);
  const settled = await snapshot();

  const late = T + TTL + 20;
  expect(await store.renew("invoice-42", "A", 1, late, TTL)).toBe(false);
  expect(await store.complete("invoice-42", "A", 1, late, "paid by A")).toBe(false);
  expect(await store.release("invoice-42", "A", 1, late)).toBe(false);
  // Even borrowing B's name with its old fence, or B's fence with its own name, gets nowhere.
  expect(await store.complete("invoice-42", "A", 2, late, "paid by A")).toBe(false);
  expect(await store.complete("invoice-42", "B", 1, late, "paid by A")).toBe(false);

  expect(await snapshot()).toEqual(settled);
  expect(await store.state("invoice-42")).toMatchObject({ owner: "B", fence: 2, result: "paid by B", done: true });
});
