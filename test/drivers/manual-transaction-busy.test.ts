import { join } from "node:path";
import { createClient } from "@libsql/client";
import { expect, onTestFinished, test } from "vitest";
import { libsqlFileDriver } from "../../src/drivers/libsql-file.ts";
import { freshDir } from "../fresh-db.ts";

// `run` calls share one connection, so a transaction opened by run("BEGIN")
// holds across calls; a statement in it that waits for another connection's
// lock must wait on that same connection, or the transaction would be lost
// and its statement committed alone.

test("a statement run inside a transaction opened with run(BEGIN) that meets another connection's lock stays inside that transaction", async () => {
  const path = join(freshDir(), "driver.db");
  const driver = libsqlFileDriver(path);
  onTestFinished(() => driver.close());
  const holder = createClient({ url: `file:${path}` });
  onTestFinished(() => holder.close());
  await driver.run({ sql: "CREATE TABLE t (n INTEGER)", args: [] });

  await driver.run({ sql: "BEGIN", args: [] });
  const lock = await holder.transaction("write");
  const insert = driver.run({ sql: "INSERT INTO t VALUES (1)", args: [] });
  await new Promise((resolve) => setTimeout(resolve, 200));
  lock.close();
  await insert;
  // The caller changes its mind: nothing of its transaction may stay.
  const rolledBack = driver.run({ sql: "ROLLBACK", args: [] }).then(() => "rolled back", (error: Error) => `ROLLBACK failed: ${error.message}`);
  expect(await rolledBack).toBe("rolled back");
  expect((await holder.execute("SELECT count(*) AS n FROM t")).rows[0]).toMatchObject({ n: 0 });
});

test("a transaction opened with run(BEGIN) whose first write met a lock commits once, with its writes, when the lock is free", async () => {
  const path = join(freshDir(), "driver.db");
  const driver = libsqlFileDriver(path);
  onTestFinished(() => driver.close());
  const holder = createClient({ url: `file:${path}` });
  onTestFinished(() => holder.close());
  await driver.run({ sql: "CREATE TABLE t (n INTEGER)", args: [] });

  const transaction = async () => {
    await driver.run({ sql: "BEGIN", args: [] });
    await driver.run({ sql: "INSERT INTO t VALUES (1)", args: [] });
    await driver.run({ sql: "INSERT INTO t VALUES (2)", args: [] });
    await driver.run({ sql: "COMMIT", args: [] });
  };
  const lock = await holder.transaction("write");
  const first = transaction();
  await new Promise((resolve) => setTimeout(resolve, 200));
  lock.close();
  const outcome = await first.then(() => "committed", (error: Error) => error.message);
  if (outcome !== "committed") await transaction(); // the caller was told it failed
  expect({ outcome, rows: (await holder.execute("SELECT n FROM t ORDER BY n")).rows.map((row) => row.n) }).toEqual({ outcome: "committed", rows: [1, 2] });
});
