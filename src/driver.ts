import type { Client, InValue } from "@libsql/client";

/** One SQL statement with its positional (`?1`, `?2` ...) arguments. */
export type Statement = { sql: string; args: InValue[] };

/** A result row, read by column name. */
export type Row = Record<string, unknown>;

/**
 * The seam between the lease rules and a database: every store verb is one
 * statement or one atomic batch, so this is all a storage has to offer.
 */
export interface Driver {
  /** Runs one statement on its own (autocommit) and returns its rows. */
  run(statement: Statement): Promise<Row[]>;
  /** Runs the statements in one write transaction: all of them, or none. */
  batch(statements: Statement[]): Promise<Row[][]>;
  /** Gives the connection back; the driver is unusable afterwards. */
  close(): void;
}

/** A driver over an `@libsql/client` Client: a local file, sqld or Turso. */
export function libsqlDriver(client: Client): Driver {
  return {
    async run(statement) {
      return (await client.execute(statement)).rows as unknown as Row[];
    },
    async batch(statements) {
      const results = await client.batch(statements, "write");
      return results.map((result) => result.rows as unknown as Row[]);
    },
    close() {
      client.close();
    },
  };
}
