import Database from "libsql";
import { describe, expect, test } from "vitest";
import { readMigrations } from "../../src/node.ts";
import { splitStatements } from "../../src/store/sql-script.ts";

describe("splitStatements", () => {
  test("ends a statement at each ; outside a string, a quoted name and a comment", () => {
    const script = `CREATE TABLE "a;b" (x TEXT DEFAULT 'it''s; here', [c;d] INTEGER, \`e;f\` REAL); -- a comment; with a ;
INSERT INTO "a;b" (x) VALUES ('/* no comment; */');
/* a comment; */ SELECT 1;`;
    expect(splitStatements(script)).toEqual([
      `CREATE TABLE "a;b" (x TEXT DEFAULT 'it''s; here', [c;d] INTEGER, \`e;f\` REAL);`,
      `-- a comment; with a ;\nINSERT INTO "a;b" (x) VALUES ('/* no comment; */');`,
      "/* a comment; */ SELECT 1;",
    ]);
  });

  test("a trigger's body ends at the END after a ;, so a CASE ... END inside it ends nothing", () => {
    const trigger = `CREATE TEMP TRIGGER t AFTER INSERT ON a
BEGIN
  UPDATE a SET x = CASE WHEN new.x = 'end;' THEN 1 ELSE 2 END;
  DELETE FROM a WHERE x = (SELECT CASE 1 WHEN 1 THEN 0 END);
END;`;
    expect(splitStatements(`CREATE TABLE a (x);\n${trigger}\nSELECT 1`)).toEqual(["CREATE TABLE a (x);", trigger, "SELECT 1"]);
    expect(splitStatements("create trigger t after insert on a begin select 1; end; select 2;")).toEqual(["create trigger t after insert on a begin select 1; end;", "select 2;"]);
  });

  test("blanks, comments and lone semicolons are no statement", () => {
    expect(splitStatements("  -- only a comment\n /* and another */ ;; \n")).toEqual([]);
    expect(splitStatements("")).toEqual([]);
  });

  test("every file of migrations/ splits into statements SQLite prepares one at a time, which build what the whole file builds", async () => {
    const [whole, split] = [new Database(":memory:"), new Database(":memory:")];
    for (const migration of await readMigrations()) {
      whole.exec(migration.sql);
      // libSQL prepares the first statement of a text and drops the rest silently: a split that joined two would lose one here.
      for (const statement of splitStatements(migration.sql)) split.prepare(statement).run();
    }
    const schema = (db: Database.Database) => db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").all();
    expect(schema(split)).toEqual(schema(whole));
    expect(schema(whole).length).toBeGreaterThan(20);
  });
});
