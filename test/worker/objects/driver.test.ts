import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, test } from "vitest";
import { MAX_BOUND_PARAMETERS, objectDriver } from "../../../src/drivers/durable-object-sql.ts";
import type { Driver } from "../../../src/drivers/driver.ts";

// The driver over a Durable Object's SQLite, on a fresh object's storage: what
// the runtime's `sql.exec` would do silently is done as the other drivers do it.

function inFreshObject<T>(work: (driver: Driver) => Promise<T>): Promise<T> {
  const stub = env.QUEUES!.get(env.QUEUES!.newUniqueId()) as unknown as DurableObjectStub;
  return runInDurableObject(stub, async (_object, state) => {
    state.storage.sql.exec("CREATE TABLE t (x)");
    return work(objectDriver(state.storage as never));
  });
}

describe("the Durable Object SQLite driver", () => {
  test(`refuses a statement binding more than ${MAX_BOUND_PARAMETERS} parameters before it runs, and takes one of ${MAX_BOUND_PARAMETERS}`, async () => {
    const answer = await inFreshObject(async (driver) => {
      const args = (n: number) => Array.from({ length: n }, (_, i) => i);
      const values = (n: number) => args(n).map((i) => `(?${i + 1})`).join(", ");
      const refused = await driver.run({ sql: `INSERT INTO t (x) VALUES ${values(101)}`, args: args(101) }).catch((error: Error) => error);
      await driver.run({ sql: `INSERT INTO t (x) VALUES ${values(100)}`, args: args(100) });
      return { refused: String(refused), rows: await driver.run({ sql: "SELECT count(*) AS n FROM t", args: [] }) };
    });
    expect(answer.refused).toContain("binds 101 parameters, more than the 100");
    expect(answer.rows).toEqual([{ n: 100 }]);
  });

  test("binds a boolean as 1 or 0, and refuses undefined and NaN, which exec would bind as NULL", async () => {
    const answer = await inFreshObject(async (driver) => ({
      booleans: await driver.run({ sql: "SELECT ?1 AS yes, ?2 AS no", args: [true, false] }),
      undefined: String(await driver.run({ sql: "SELECT ?1", args: [undefined as never] }).catch((error: Error) => error)),
      nan: String(await driver.run({ sql: "SELECT ?1", args: [Number.NaN] }).catch((error: Error) => error)),
    }));
    expect(answer).toEqual({
      booleans: [{ yes: 1, no: 0 }],
      undefined: "TypeError: undefined cannot be passed as argument to the database",
      nan: "RangeError: Only finite numbers (not Infinity or NaN) can be passed as arguments",
    });
  });

  test("a batch is one transaction: a statement that fails rolls back those before it, and the error is SQLite's", async () => {
    const answer = await inFreshObject(async (driver) => {
      const failed = await driver.batch([{ sql: "INSERT INTO t (x) VALUES (1)", args: [] }, { sql: "INSERT INTO nowhere (x) VALUES (2)", args: [] }]).catch((error: Error) => error);
      const [inserted, read] = await driver.batch([{ sql: "INSERT INTO t (x) VALUES (?1) RETURNING x", args: [3] }, { sql: "SELECT x FROM t", args: [] }]);
      return { failed: String(failed), inserted, read };
    });
    expect(answer.failed).toContain("no such table: nowhere");
    expect(answer.inserted).toEqual([{ x: 3 }]);
    expect(answer.read).toEqual([{ x: 3 }]);
  });
});
