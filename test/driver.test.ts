import { describe, expect, test } from "vitest";
import { storageError } from "../src/drivers/driver.ts";
import { StorageUnavailable } from "../src/index.ts";

// Whether a failed write may have landed decides whether a client may send a
// claim again, so the classification is tested on its own.
describe("storageError", () => {
  test("on a local file, every transient error left nothing applied: the batch was rolled back", () => {
    for (const message of ["SQLITE_BUSY: database is locked", "SQLITE_IOERR: disk I/O error"]) {
      expect(storageError(Object.assign(new Error(message), { code: message.split(":")[0] }), true)).toMatchObject({ outcome: "not_applied" });
    }
  });

  test("over a network, a refusal by the database applied nothing, while a broken connection leaves the outcome unknown", () => {
    const busy = Object.assign(new Error("SQLITE_BUSY: database is locked"), { code: "SQLITE_BUSY" });
    expect(storageError(busy)).toMatchObject({ name: "StorageUnavailable", outcome: "not_applied" });
    expect(storageError(new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) }))).toMatchObject({ outcome: "not_applied" });
    expect(storageError(new TypeError("fetch failed", { cause: new Error("other side closed") }))).toMatchObject({ outcome: "unknown" });
    expect(storageError(new Error("D1_ERROR: Network connection lost."))).toMatchObject({ outcome: "unknown" });
  });

  test("an error in the statement itself is passed on as it is, for the 500 it deserves", () => {
    const wrong = new Error("SQLITE_ERROR: no such table: jobs");
    expect(storageError(wrong)).toBe(wrong);
    expect(storageError(wrong, true)).not.toBeInstanceOf(StorageUnavailable);
  });
});
