import { type Driver, type Row, type Statement, storageError } from "./driver.ts";

/**
 * The part of a SQLite-backed Durable Object's storage (`ctx.storage`) the
 * driver uses; typed here by shape, so that the driver builds without the
 * Workers types.
 */
export type ObjectStorage = {
  sql: { exec(query: string, ...bindings: unknown[]): { toArray(): Row[]; readonly rowsRead: number; readonly rowsWritten: number } };
  transactionSync<T>(closure: () => T): T;
};

/** Rows read and written, as the runtime counts them for billing; a driver given one adds each statement's. */
export type RowMeter = { rowsRead: number; rowsWritten: number };

/**
 * The most parameters one statement may bind in a Durable Object's SQLite
 * ("Maximum bound parameters per query: 100", Durable Objects limits); the
 * statements of src/store/sql bind a handful each and pass many jobs as one
 * JSON array, so a statement past it is a bug of ours, refused before it runs.
 */
export const MAX_BOUND_PARAMETERS = 100;

/**
 * An argument as the object's SQLite should bind it. `exec` binds a boolean as
 * the text "true" and undefined or NaN as NULL, silently; these are converted
 * as the other drivers convert them (a boolean is 1 or 0) or refused as
 * @libsql/client refuses them, so a statement means the same on every storage.
 */
function bindable(value: unknown): unknown {
  if (typeof value === "boolean") return value ? 1 : 0;
  if (value === undefined) throw new TypeError("undefined cannot be passed as argument to the database");
  if (typeof value === "number" && !Number.isFinite(value)) throw new RangeError("Only finite numbers (not Infinity or NaN) can be passed as arguments");
  return value;
}

/**
 * A driver over a Durable Object's own SQLite (`ctx.storage`): `run` is one
 * `sql.exec`, `batch` runs its statements inside `transactionSync`, all of
 * them or none (the runtime refuses BEGIN and SAVEPOINT: a transaction is
 * only this closure). Every call is synchronous underneath, and the object
 * runs one event at a time between awaits, so a batch is never interleaved
 * with another request's statements.
 *
 * A blob comes back as an ArrayBuffer, as from @libsql/client; the store
 * keeps none. Failures are those of a local file (storageError "local"):
 * SQLite's busy, full or I/O answers are StorageUnavailable with nothing
 * applied, a statement's own error passes as it is, its batch rolled back.
 */
export function objectDriver(storage: ObjectStorage): Driver {
  const exec = ({ sql, args }: Statement): Row[] => {
    if (args.length > MAX_BOUND_PARAMETERS) throw new RangeError(`a statement binds ${args.length} parameters, more than the ${MAX_BOUND_PARAMETERS} a Durable Object's SQLite takes: ${sql.slice(0, 80)}`);
    try {
      return storage.sql.exec(sql, ...args.map(bindable)).toArray();
    } catch (error) {
      throw storageError(error, "local");
    }
  };
  return {
    async run(statement) {
      return exec(statement);
    },
    async batch(statements) {
      return storage.transactionSync(() => statements.map(exec));
    },
    close() {
      // the storage is the object's own; there is no connection to give back
    },
  };
}

/**
 * The same storage, adding to `meter` the rows each statement read and wrote
 * as the runtime counts them for billing (`rowsRead`, `rowsWritten`, which
 * include what triggers and indexes did): what the cost tests and the bench
 * measure an object by.
 */
export function metered<S extends ObjectStorage>(storage: S, meter: RowMeter): S {
  const exec = (query: string, ...bindings: unknown[]) => {
    const cursor = storage.sql.exec(query, ...bindings);
    return {
      toArray() {
        const rows = cursor.toArray();
        meter.rowsRead += cursor.rowsRead;
        meter.rowsWritten += cursor.rowsWritten;
        return rows;
      },
      get rowsRead() {
        return cursor.rowsRead;
      },
      get rowsWritten() {
        return cursor.rowsWritten;
      },
    };
  };
  return new Proxy(storage, {
    get(target, key) {
      if (key === "sql") return { exec };
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value; // the runtime's methods need their own `this`
    },
  }) as S;
}
