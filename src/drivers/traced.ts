import { context, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { StorageUnavailable } from "../store/errors.ts";
import { serverTracer } from "../tracing/tracer.ts";
import type { Driver, Row, Statement } from "./driver.ts";

// A span for each call of the store to its database: a statement run on its
// own, or a batch (one transaction), named by what its statements do
// ("UPDATE jobs; INSERT events"), as OpenTelemetry's database conventions
// name them. Only inside a span that records (a traced request, or a caller's
// own span): the store's background calls (the wait rooms' re-checks, the
// maintenance timers, the health probe) would otherwise each start a trace of
// their own, a second apart. With no SDK, or no recording span, a call costs
// one look at the active context.

// Where a statement names the table it writes or reads first, by its verb; a
// table-valued function (json_each) or a subquery after FROM is not a table.
const TABLE: Record<string, RegExp> = { INSERT: /\bINTO\s+(\w+)/i, UPDATE: /^\s*UPDATE\s+(\w+)/i, DELETE: /\bFROM\s+(\w+)/i };
const READ_TABLE = /\bFROM\s+(\w+)\b(?!\s*\()/i;

/** What a statement does, in few words: its verb and its table ("INSERT jobs", "SELECT jobs"). */
function summary(sql: string): string {
  const verb = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? "";
  const table = (TABLE[verb] ?? READ_TABLE).exec(sql)?.[1];
  return table ? `${verb} ${table}` : verb;
}

/** Runs `call` in a span of the store's database, or as it is when no recording span is active. */
async function inSpan(statements: Statement[], call: () => Promise<Row[][]>): Promise<Row[][]> {
  if (!trace.getSpan(context.active())?.isRecording()) return call();
  const query = statements.map((statement) => summary(statement.sql)).join("; ");
  const span: Span = serverTracer.startSpan(query, {
    kind: SpanKind.CLIENT,
    attributes: {
      "db.system.name": "sqlite",
      "db.query.summary": query,
      "db.operation.name": statements.length > 1 ? "BATCH" : summary(statements[0]!.sql).split(" ")[0]!,
      ...(statements.length > 1 && { "db.operation.batch.size": statements.length }),
    },
  });
  try {
    const results = await call();
    span.setAttribute("db.response.returned_rows", results.reduce((rows, result) => rows + result.length, 0));
    return results;
  } catch (error) {
    span.recordException(error as Error);
    span.setAttribute("error.type", error instanceof StorageUnavailable ? `storage_${error.reason}` : (error as Error).name ?? "Error");
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    span.end();
  }
}

/** The driver with a span for each of its calls inside a recording span (see above); the answers and errors are the driver's. */
export function traced(driver: Driver): Driver {
  return {
    run: async (statement) => (await inSpan([statement], async () => [await driver.run(statement)]))[0]!,
    batch: (statements) => inSpan(statements, () => driver.batch(statements)),
    close: () => driver.close(),
    remote: driver.remote,
  };
}
