import { createClient } from "@libsql/client";
import { onTestFinished, describe, expect, test } from "vitest";
import { type FencedDatabase, fencedWrite } from "../../src/client/index.ts";
import { freshUrl } from "../fresh-db.ts";

/** The doc comment's example table in a fresh database file, one row already stored, and what was sent to it. */
async function invoices() {
  const db = createClient({ url: freshUrl() });
  onTestFinished(() => db.close());
  await db.execute("CREATE TABLE invoices (key TEXT PRIMARY KEY, fence INTEGER NOT NULL, status TEXT NOT NULL, amount INTEGER NOT NULL)");
  await db.execute("INSERT INTO invoices VALUES ('invoice-42', 2, 'paid by fence 2', 120), ('invoice-7', 1, 'untouched', 7)");
  const sent: string[] = [];
  const counted: FencedDatabase = {
    execute: (statement) => {
      sent.push(statement.sql);
      return db.execute(statement);
    },
  };
  const rows = async () => (await db.execute("SELECT * FROM invoices ORDER BY key")).rows.map((row) => ({ ...row }));
  return { db: counted, libsql: db, sent, rows };
}

const write = (key: string, fence: number, status: string) => ({ table: "invoices", key, fence, values: { status, amount: 120 } });

describe("fencedWrite", () => {
  test("stores a write with a higher fence than the stored one, and leaves the other keys alone", async () => {
    const { db, rows } = await invoices();
    expect(await fencedWrite(db, write("invoice-42", 3, "paid by fence 3"))).toBe(true);
    expect(await rows()).toEqual([
      { key: "invoice-42", fence: 3, status: "paid by fence 3", amount: 120 },
      { key: "invoice-7", fence: 1, status: "untouched", amount: 7 },
    ]);
  });

  test.each([
    ["a lower fence", 1],
    ["the same fence again", 2],
  ])("refuses %s and leaves the row as it was", async (_, fence) => {
    const { db, rows } = await invoices();
    const before = await rows();
    expect(await fencedWrite(db, write("invoice-42", fence, `late write with fence ${fence}`))).toBe(false);
    expect(await rows()).toEqual(before);
  });

  test("stores a new key with any fence, through a libSQL client as it is", async () => {
    const { libsql, rows } = await invoices();
    expect(await fencedWrite(libsql, { table: "invoices", key: "invoice-9", fence: 1, values: { status: "new", amount: 9 } })).toBe(true);
    expect((await rows()).find((row) => row.key === "invoice-9")).toEqual({ key: "invoice-9", fence: 1, status: "new", amount: 9 });
  });

  test("a new key written with a high fence refuses a lower one after it", async () => {
    const { db, rows } = await invoices();
    expect(await fencedWrite(db, write("race", 5, "by fence 5"))).toBe(true);
    expect(await fencedWrite(db, write("race", 4, "by fence 4"))).toBe(false);
    expect((await rows()).find((row) => row.key === "race")).toMatchObject({ fence: 5, status: "by fence 5" });
  });

  test.each([
    ["a table name with SQL in it", { table: "invoices; DROP TABLE invoices", values: { status: "x" } }, /table must be a plain identifier/],
    ["a quoted table name", { table: '"invoices"', values: { status: "x" } }, /table must be a plain identifier/],
    ["a column name with SQL in it", { table: "invoices", values: { "status = 'x' --": "x" } }, /a column name in values must be a plain identifier/],
    ["a column name starting with a digit", { table: "invoices", values: { "1status": "x" } }, /plain identifier/],
    ["values that set the fence", { table: "invoices", values: { fence: 99 } }, /values must not set "fence"/],
    ["values that set the key", { table: "invoices", values: { key: "other" } }, /values must not set "key"/],
    ["an undefined value", { table: "invoices", values: { status: undefined } }, /values.status is undefined/],
    ["a fence of 0", { table: "invoices", fence: 0, values: { status: "x" } }, /fence must be a positive whole number/],
    ["a fractional fence", { table: "invoices", fence: 1.5, values: { status: "x" } }, /fence must be a positive whole number/],
  ])("refuses %s before anything is sent", async (_, bad, says) => {
    const { db, sent, rows } = await invoices();
    const before = await rows();
    const attempt = { key: "invoice-42", fence: 3, ...bad } as Parameters<typeof fencedWrite>[1];
    await expect(fencedWrite(db, attempt)).rejects.toThrow(says);
    expect(sent).toEqual([]);
    expect(await rows()).toEqual(before);
  });
});
