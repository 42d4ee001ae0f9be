import { describe, expect, test } from "vitest";
import { storeContract } from "./contract/store.contract.ts";
import { freshStore } from "./fresh-db.ts";

// The store contract on libSQL over a real file; the same suite runs on D1 in
// test/worker/store-d1.test.ts. A D1 binding has no connection to close, so
// closing is tested here only.
storeContract(freshStore);

describe("close", () => {
  test("gives the connection back: the store answers nothing afterwards, and the rows stay", async () => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: 1 });
    await store.claim("job-1", "A", 1, 1_000);
    const before = await snapshot();
    store.close();
    await expect(store.state("job-1")).rejects.toThrow();
    await expect(store.ping()).rejects.toThrow(); // so /healthz answers 503
    expect(await snapshot()).toEqual(before);
  });
});
