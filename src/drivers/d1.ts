import type { D1Database } from "@cloudflare/workers-types";
import { type Driver, type Row, storageError } from "./driver.ts";

/** A driver over a Cloudflare D1 binding: `db.batch` is D1's atomic write batch. */
export function d1Driver(db: D1Database): Driver {
  const prepare = (statement: { sql: string; args: unknown[] }) => db.prepare(statement.sql).bind(...statement.args);
  return {
    async run(statement) {
      try {
        return (await prepare(statement).all<Row>()).results;
      } catch (error) {
        throw storageError(error, "d1");
      }
    },
    async batch(statements) {
      try {
        return (await db.batch<Row>(statements.map(prepare))).map((result) => result.results);
      } catch (error) {
        throw storageError(error, "d1");
      }
    },
    close() {
      // a binding has no connection of ours to give back
    },
    remote: true,
  };
}
