import { type Driver, readsOnly, type Row, type Statement } from "./driver.ts";
import { StorageUnavailable } from "../store/errors.ts";

/** Options of `groupCommit`; every one has a default. */
export type GroupCommitOptions = {
  /** The most statements one group transaction carries; callers past it wait for the next group. Default 512. */
  maxStatements?: number | undefined;
};

/** One caller waiting for its statements to run. */
type Waiting = {
  statements: Statement[];
  /** A `run` (answers one statement's rows) rather than a `batch`. */
  single: boolean;
  resolve: (rows: Row[] | Row[][]) => void;
  reject: (error: unknown) => void;
};


/**
 * groupCommit makes a Driver whose writes that arrive together run as one
 * write batch (one transaction, one commit) on the inner driver, so they share
 * the cost of a commit. Each caller's statements run contiguously and in
 * arrival order, so every statement still decides alone, on the state the
 * callers before it left: the outcome is that of running the callers one
 * after another.
 *
 * A write waits at most one turn of the event loop (`setImmediate`) for
 * company, and none when it is alone. If the group fails because of one
 * caller's statement (a trigger refusing, a constraint: any error but
 * StorageUnavailable, which the Driver contract makes a transaction known to
 * be rolled back), nothing of it was committed, and each caller runs again on
 * its own, so only that caller fails. If it fails with StorageUnavailable,
 * every caller gets that error and none runs again: with outcome
 * `not_applied` (busy, unreachable) nothing was committed, as each would have
 * met alone; with outcome `unknown` (the connection broke mid-answer, a
 * timeout) the group may have committed, and running a caller again could
 * apply its write twice (a second claim-next lease, a claim refused by the
 * caller's own lease). The callers that were waiting for the next group
 * then get StorageUnavailable at once too, outcome `not_applied` (nothing of
 * theirs was sent), with the same reason: groups run one after another, so
 * without that a database that stops answering would hold each of them for
 * its own timeout in turn. Reads (`run` of a SELECT) bypass the group.
 *
 * @example
 * const client = await connect("file:./data/fencelease.db");
 * const store = new LeaseStore(groupCommit(libsqlDriver(client, { afterBusy: () => reconnect(client) })));
 */
export function groupCommit(inner: Driver, options: GroupCommitOptions = {}): Driver {
  const maxStatements = options.maxStatements ?? 512;
  if (!Number.isSafeInteger(maxStatements) || maxStatements < 1) throw new RangeError(`maxStatements must be a positive integer, got ${maxStatements}`);
  let waiting: Waiting[] = [];
  let scheduled = false;
  let flushing = false;

  function enqueue(statements: Statement[], single: boolean): Promise<Row[] | Row[][]> {
    return new Promise((resolve, reject) => {
      waiting.push({ statements, single, resolve, reject });
      if (!scheduled && !flushing) {
        scheduled = true;
        setImmediate(flush);
      }
    });
  }

  async function flush(): Promise<void> {
    scheduled = false;
    flushing = true;
    try {
      while (waiting.length > 0) {
        let count = 0;
        let take = 0;
        while (take < waiting.length && (take === 0 || count + waiting[take]!.statements.length <= maxStatements)) count += waiting[take++]!.statements.length;
        const group = waiting.slice(0, take);
        waiting = waiting.slice(take);
        const failure = await (group.length === 1 ? alone(group[0]!) : together(group));
        if (failure) {
          failed(waiting, failure);
          waiting = [];
        }
      }
    } finally {
      flushing = false;
    }
  }

  /** Tells callers whose statements were never sent that the database could not serve the one before them; answers that failure. */
  function failed(callers: Waiting[], failure: StorageUnavailable): StorageUnavailable {
    for (const caller of callers) caller.reject(new StorageUnavailable(failure, "not_applied", failure.reason));
    return failure;
  }

  /** Runs one caller's statements; answers the StorageUnavailable they met, if they did. */
  async function alone(caller: Waiting): Promise<StorageUnavailable | undefined> {
    try {
      caller.resolve(caller.single ? await inner.run(caller.statements[0]!) : await inner.batch(caller.statements));
    } catch (error) {
      caller.reject(error);
      if (error instanceof StorageUnavailable) return error;
    }
    return undefined;
  }

  /** Runs a group as one batch; answers the StorageUnavailable it met, if it did. */
  async function together(group: Waiting[]): Promise<StorageUnavailable | undefined> {
    let results: Row[][];
    try {
      results = await inner.batch(group.flatMap((caller) => caller.statements));
    } catch (error) {
      if (error instanceof StorageUnavailable) {
        for (const caller of group) caller.reject(error); // never run again: it may have committed
        return error;
      }
      // Rolled back: find the one that fails, and fail only it.
      for (const [i, caller] of group.entries()) {
        const failure = await alone(caller);
        if (failure) return failed(group.slice(i + 1), failure);
      }
      return undefined;
    }
    let at = 0;
    for (const caller of group) {
      const own = results.slice(at, at + caller.statements.length);
      at += caller.statements.length;
      caller.resolve(caller.single ? own[0]! : own);
    }
    return undefined;
  }

  return {
    run(statement) {
      if (readsOnly(statement)) return inner.run(statement); // no write transaction needed: at once, on its own
      return enqueue([statement], true) as Promise<Row[]>;
    },
    batch(statements) {
      if (statements.length === 0) return inner.batch(statements);
      return enqueue(statements, false) as Promise<Row[][]>;
    },
    close() {
      inner.close();
    },
    remote: inner.remote,
  };
}
