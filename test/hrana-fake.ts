import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Database from "libsql";
import { onTestFinished } from "vitest";

// A database server that speaks the part of Hrana over HTTP (version 2, JSON:
// `POST /v2/pipeline`) that @libsql/client sends to an `http://` URL, as sqld
// and Turso do, on a real database file. `fault` makes it fail the way a
// network or a remote database fails: cut the answer mid-body after the
// statements ran, end it with truncated JSON, or hold it without an answer.
//
// Implemented: the requests `execute`, `batch` (with every condition),
// `sequence`, `store_sql`, `close_sql`, `get_autocommit` and `close`; batons,
// so a stream (one connection) lives across requests (interactive
// transactions); values as Hrana's JSON encodes them. Not implemented: cursors
// and protocol version 3 (the client asks for neither on `http://`), `describe`.

/**
 * How the pipeline requests that match fail: `times` of them (default: all,
 * until `fault` is set again), `match` says which (default: any).
 */
export type Fault =
  /** Answered as it should be. */
  | { kind: "none" }
  | ({
      kind:
        /** The statements run (and commit), then the connection is cut halfway through the answer. */
        | "cut-after"
        /** The statements run, then the answer ends cleanly after half its JSON. */
        | "truncate-after"
        /** The connection is cut as the request arrives: nothing runs. */
        | "cut-before"
        /** The request is held without running anything until `release()`; then it runs and is answered. */
        | "stall";
    } & { match?: Match; times?: number });

/** Which requests a fault takes: every pipeline request, or only those that carry a batch (a write transaction). */
export type Match = "any" | "batch";

type HranaValue = { type: "null" } | { type: "integer"; value: string } | { type: "float"; value: number } | { type: "text"; value: string } | { type: "blob"; base64: string };
type Stmt = { sql?: string; sql_id?: number; args?: HranaValue[]; named_args?: { name: string; value: HranaValue }[]; want_rows?: boolean };
type Cond = { type: "ok" | "error"; step: number } | { type: "not"; cond: Cond } | { type: "and" | "or"; conds: Cond[] } | { type: "is_autocommit" };
type Request =
  | { type: "execute"; stmt: Stmt }
  | { type: "batch"; batch: { steps: { condition?: Cond; stmt: Stmt }[] } }
  | { type: "sequence"; sql?: string; sql_id?: number }
  | { type: "store_sql"; sql_id: number; sql: string }
  | { type: "close_sql"; sql_id: number }
  | { type: "get_autocommit" }
  | { type: "close" };

/** A stream: one connection to the file, and the SQL texts stored on it. */
type Stream = { db: Database.Database; sqls: Map<number, string> };

function fromHrana(value: HranaValue): unknown {
  switch (value.type) {
    case "null":
      return null;
    case "integer":
      return BigInt(value.value);
    case "float":
    case "text":
      return value.value;
    case "blob":
      return Buffer.from(value.base64, "base64");
  }
}

function toHrana(value: unknown): HranaValue {
  if (value === null || value === undefined) return { type: "null" };
  if (typeof value === "bigint") return { type: "integer", value: String(value) };
  if (typeof value === "number") return { type: "float", value };
  if (typeof value === "string") return { type: "text", value };
  return { type: "blob", base64: Buffer.from(value as Uint8Array).toString("base64") };
}

/** An error as Hrana carries it: a message and SQLite's code. */
function hranaError(error: unknown) {
  return { message: (error as Error).message, code: (error as { code?: string }).code ?? "UNKNOWN" };
}

function execute(stream: Stream, stmt: Stmt) {
  const sql = stmt.sql ?? stream.sqls.get(stmt.sql_id!);
  if (sql === undefined) throw Object.assign(new Error(`no SQL text stored as ${stmt.sql_id}`), { code: "SQL_NOT_FOUND" });
  const statement = stream.db.prepare(sql);
  statement.safeIntegers(true); // an INTEGER comes back as a bigint, so it is told apart from a REAL
  const named = Object.fromEntries((stmt.named_args ?? []).map(({ name, value }) => [name.replace(/^[:@$]/, ""), fromHrana(value)]));
  const args: unknown[] = (stmt.args ?? []).map(fromHrana);
  const bind = stmt.named_args?.length ? [named] : args;
  const cols = statement.columns().map((column) => ({ name: column.name, decltype: column.type ?? null }));
  if (cols.length > 0) {
    statement.raw(true);
    const rows = statement.all(...bind) as unknown[][];
    return { cols, rows: rows.map((row) => row.map(toHrana)), affected_row_count: 0, last_insert_rowid: null };
  }
  const info = statement.run(...bind);
  return { cols: [], rows: [], affected_row_count: Number(info.changes), last_insert_rowid: String(info.lastInsertRowid) };
}

function holds(cond: Cond | undefined, outcomes: ("ok" | "error" | undefined)[], stream: Stream): boolean {
  if (cond === undefined) return true;
  switch (cond.type) {
    case "ok":
    case "error":
      return outcomes[cond.step] === cond.type;
    case "not":
      return !holds(cond.cond, outcomes, stream);
    case "and":
      return cond.conds.every((each) => holds(each, outcomes, stream));
    case "or":
      return cond.conds.some((each) => holds(each, outcomes, stream));
    case "is_autocommit":
      return !stream.db.inTransaction;
  }
}

function respond(stream: Stream, request: Request): object {
  switch (request.type) {
    case "execute":
      return { type: "execute", result: execute(stream, request.stmt) };
    case "batch": {
      const outcomes: ("ok" | "error" | undefined)[] = [];
      const results: unknown[] = [];
      const errors: unknown[] = [];
      for (const step of request.batch.steps) {
        let result = null;
        let error = null;
        if (holds(step.condition, outcomes, stream)) {
          try {
            result = execute(stream, step.stmt);
            outcomes.push("ok");
          } catch (failure) {
            error = hranaError(failure);
            outcomes.push("error");
          }
        } else outcomes.push(undefined);
        results.push(result);
        errors.push(error);
      }
      return { type: "batch", result: { step_results: results, step_errors: errors } };
    }
    case "sequence":
      stream.db.exec(request.sql ?? stream.sqls.get(request.sql_id!)!);
      return { type: "sequence" };
    case "store_sql":
      stream.sqls.set(request.sql_id, request.sql);
      return { type: "store_sql" };
    case "close_sql":
      stream.sqls.delete(request.sql_id);
      return { type: "close_sql" };
    case "get_autocommit":
      return { type: "get_autocommit", is_autocommit: !stream.db.inTransaction };
    case "close":
      return { type: "close" };
  }
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * hranaFake starts the fake on a free loopback port over the database file at
 * `path` (each stream opens its own connection, with a busy timeout); it stops
 * when the test ends. `url` is what to give @libsql/client or openStore.
 */
export async function hranaFake(path: string) {
  const streams = new Map<string, Stream>();
  const held: (() => void)[] = [];
  let fault: Fault = { kind: "none" };
  let batons = 0;
  const seen = { pipelines: 0, batches: 0, abandoned: 0 };

  /** Runs one pipeline request and answers its JSON; a stream whose last request is `close` is closed. */
  function pipeline(body: { baton?: string | null; requests: Request[] }): { status: number; json: object } {
    let stream: Stream | undefined;
    if (body.baton) {
      stream = streams.get(body.baton);
      if (!stream) return { status: 400, json: { message: "The stream has expired due to inactivity", code: "STREAM_EXPIRED" } };
      streams.delete(body.baton);
    } else {
      const db = new Database(path, { timeout: 5_000 });
      stream = { db, sqls: new Map() };
    }
    const results = body.requests.map((request) => {
      try {
        return { type: "ok", response: respond(stream, request) };
      } catch (error) {
        return { type: "error", error: hranaError(error) };
      }
    });
    let baton: string | null = null;
    if (body.requests.at(-1)?.type === "close") stream.db.close();
    else streams.set((baton = `baton-${++batons}`), stream);
    return { status: 200, json: { baton, base_url: null, results } };
  }

  function answer(response: ServerResponse, status: number, json: object): void {
    const text = JSON.stringify(json);
    response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    response.end(text);
  }

  const server = createServer(async (request, response) => {
    if (request.method !== "POST" || request.url !== "/v2/pipeline") return answer(response, 404, { message: `no route ${request.method} ${request.url}` });
    const body = JSON.parse(await bodyOf(request)) as { baton?: string | null; requests: Request[] };
    seen.pipelines++;
    const batch = body.requests.some((each) => each.type === "batch");
    if (batch) seen.batches++;
    let taken: Fault["kind"] = "none";
    if (fault.kind !== "none" && ((fault.match ?? "any") === "any" || batch)) {
      taken = fault.kind;
      if (fault.times !== undefined && --fault.times <= 0) fault = { kind: "none" };
    }
    switch (taken) {
      case "none": {
        const { status, json } = pipeline(body);
        return answer(response, status, json);
      }
      case "cut-before":
        return void request.socket.destroy();
      case "cut-after": {
        const text = JSON.stringify(pipeline(body).json);
        response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
        response.write(text.slice(0, Math.floor(text.length / 2)));
        // Let the half reach the client before the connection goes.
        return void setTimeout(() => response.socket?.destroy(), 10);
      }
      case "truncate-after": {
        const text = JSON.stringify(pipeline(body).json);
        response.writeHead(200, { "content-type": "application/json" }); // chunked: the end of the body looks normal
        return void response.end(text.slice(0, Math.floor(text.length / 2)));
      }
      case "stall": {
        let gone = false;
        response.once("close", () => {
          if (!response.writableEnded) (gone = true), seen.abandoned++;
        });
        return void held.push(() => {
          if (gone) return; // the client gave up: nothing runs
          const { status, json } = pipeline(body);
          answer(response, status, json);
        });
      }
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  async function stop(): Promise<void> {
    fault = { kind: "none" };
    for (const release of held.splice(0)) release();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    for (const stream of streams.values()) stream.db.close();
    streams.clear();
  }
  onTestFinished(stop);

  return {
    url: `http://127.0.0.1:${port}`,
    /** How many pipeline requests arrived, and how many of them carried a batch. */
    seen,
    /** How many requests are held by a stall now. */
    get held(): number {
      return held.length;
    },
    /** How many held requests their client gave up (closed the connection) before an answer. */
    get abandoned(): number {
      return seen.abandoned;
    },
    /** Sets how the requests from now on fail (`{ kind: "none" }`: not at all). */
    fault(next: Fault): void {
      fault = { ...next };
    },
    /** Runs and answers the held requests (of a client still waiting), in arrival order. */
    release(): void {
      for (const release of held.splice(0)) release();
    },
    stop,
  };
}
