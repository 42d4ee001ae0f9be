import fc from "fast-check";
import { beforeAll, describe, expect, test } from "vitest";
import { freshApp } from "../fresh-app.ts";
import { documentSchemas, type OpenApiDocument, servedDocument } from "./document-schemas.ts";

// Each bound the OpenAPI document writes, sent at the bound and just past it,
// as a spec-driven fuzzer would: the value at the bound is valid by the
// document (checked by Ajv) and taken by the server, and the value past it is
// invalid by the document and refused (400, naming the field). Every bound is
// read from the document itself, so the two cannot drift apart.

const TTL = 30_000;
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";

type Schema = { $ref?: string; properties?: Record<string, Schema>; items?: Schema; [keyword: string]: unknown };

/** A request, with the value under test in it. */
type Sent = { method: string; url: string; body?: unknown };

/**
 * One bound: where the document writes it (an operation, and the field in its
 * body or `?query`), which keyword, and the request that carries a value there.
 * `at` and `past` make the values from the bound; `field` is how a refusal names it.
 */
type Bound = {
  operation: [method: string, path: string];
  field: string;
  keyword: string;
  send: (value: never) => Sent;
  at: (bound: number) => unknown;
  past: (bound: number) => unknown;
};

/** Arrays nested `depth` levels around 1. */
const nested = (depth: number): unknown => (depth === 0 ? 1 : [nested(depth - 1)]);
/** A tracestate of `count` members, their values padded (each at most 256 characters) to make it `length` characters long. */
const tracestate = (count: number, length = 0) => {
  const members = Array.from({ length: count }, (_, i) => `k${i}=v`);
  let missing = length - members.join(",").length;
  for (let i = 0; missing > 0; i = (i + 1) % count, missing--) members[i] += "v";
  return members.join(",");
};

const enqueue = (fields: object): Sent => ({ method: "POST", url: "/v1/jobs", body: { id: "new", ...fields } });

const BOUNDS: Bound[] = [
  { operation: ["post", "/v1/jobs"], field: "id", keyword: "maxLength", send: (id: string) => ({ method: "POST", url: "/v1/jobs", body: { id } }), at: (n) => "a".repeat(n), past: (n) => "a".repeat(n + 1) },
  { operation: ["post", "/v1/jobs"], field: "traceparent", keyword: "minLength", send: (traceparent: string) => enqueue({ traceparent }), at: () => `00-${TRACE}-${SPAN}-01`, past: () => `00-${TRACE}-${SPAN}-1` },
  { operation: ["post", "/v1/jobs"], field: "traceparent", keyword: "pattern", send: (traceparent: string) => enqueue({ traceparent }), at: () => `01-${TRACE}-${SPAN}-01-later`, past: () => `00-${TRACE}-${SPAN}-01-later` },
  { operation: ["post", "/v1/jobs"], field: "tracestate", keyword: "maxLength", send: (state: string) => enqueue({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: state }), at: (n) => tracestate(4, n), past: (n) => tracestate(4, n + 1) },
  { operation: ["post", "/v1/jobs"], field: "tracestate", keyword: "pattern", send: (state: string) => enqueue({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: state }), at: () => tracestate(32), past: () => tracestate(33) },
  { operation: ["post", "/v1/jobs"], field: "payload", keyword: "x-maxDepth", send: (payload: unknown) => enqueue({ payload }), at: (n) => nested(n), past: (n) => nested(n + 1) },
  { operation: ["post", "/v1/queues/{queue}/jobs"], field: "jobs", keyword: "maxItems", send: (count: number) => ({ method: "POST", url: "/v1/queues/q/jobs", body: { jobs: Array.from({ length: count }, (_, i) => ({ id: `bulk-${i}` })) } }), at: (n) => n, past: (n) => n + 1 },
  { operation: ["post", "/v1/queues/{queue}/claim"], field: "limit", keyword: "maximum", send: (limit: number) => ({ method: "POST", url: "/v1/queues/q/claim", body: { owner: "B", ttlMs: TTL, limit } }), at: (n) => n, past: (n) => n + 1 },
  { operation: ["post", "/v1/queues/{queue}/claim"], field: "waitMs", keyword: "maximum", send: (waitMs: number) => ({ method: "POST", url: "/v1/queues/q/claim", body: { owner: "B", ttlMs: TTL, waitMs } }), at: (n) => n, past: (n) => n + 1 },
  { operation: ["post", "/v1/queues/{queue}/claim"], field: "ttlMs", keyword: "maximum", send: (ttlMs: number) => ({ method: "POST", url: "/v1/queues/q/claim", body: { owner: "B", ttlMs } }), at: (n) => n, past: (n) => n + 1 },
  { operation: ["post", "/v1/jobs/{id}/fail"], field: "error", keyword: "maxLength", send: (error: string) => ({ method: "POST", url: "/v1/jobs/held/fail", body: { owner: "A", fence: 1, error } }), at: (n) => "😀".repeat(n), past: (n) => "😀".repeat(n + 1) },
  { operation: ["put", "/v1/queues/{queue}"], field: "burst", keyword: "maximum", send: (burst: number) => ({ method: "PUT", url: "/v1/queues/q", body: { ratePerSecond: 1, burst } }), at: (n) => n, past: (n) => n + 1 },
  { operation: ["put", "/v1/queues/{queue}/push"], field: "url", keyword: "maxLength", send: (url: string) => ({ method: "PUT", url: "/v1/queues/q/push", body: { url } }), at: (n) => `https://e.example/${"😀".repeat(n - 18)}`, past: (n) => `https://e.example/${"😀".repeat(n - 17)}` },
  { operation: ["put", "/v1/queues/{queue}/push"], field: "url", keyword: "pattern", send: (url: string) => ({ method: "PUT", url: "/v1/queues/q/push", body: { url } }), at: () => "HTTPS://e.example/", past: () => "https:e.example/" },
  { operation: ["put", "/v1/queues/{queue}/push"], field: "maxInFlight", keyword: "maximum", send: (maxInFlight: number) => ({ method: "PUT", url: "/v1/queues/q/push", body: { url: "https://e.example/", maxInFlight } }), at: (n) => n, past: (n) => n + 1 },
  { operation: ["put", "/v1/schedules/{name}"], field: "cron", keyword: "maxLength", send: (cron: string) => ({ method: "PUT", url: "/v1/schedules/nightly", body: { queue: "q", cron } }), at: (n) => "0 3 * * *".padEnd(n), past: (n) => "0 3 * * *".padEnd(n + 1) },
  { operation: ["put", "/v1/schedules/{name}"], field: "cron", keyword: "pattern", send: (cron: string) => ({ method: "PUT", url: "/v1/schedules/nightly", body: { queue: "q", cron } }), at: () => " @daily", past: () => "0 3 * *" },
  { operation: ["put", "/v1/schedules/{name}"], field: "everyMs", keyword: "minimum", send: (everyMs: number) => ({ method: "PUT", url: "/v1/schedules/nightly", body: { queue: "q", everyMs } }), at: (n) => n, past: (n) => n - 1 },
  // No time zone has 64 characters: at the bound, the longest the runtimes know; past it, one character too many.
  { operation: ["put", "/v1/schedules/{name}"], field: "timezone", keyword: "maxLength", send: (timezone: string) => ({ method: "PUT", url: "/v1/schedules/nightly", body: { queue: "q", cron: "0 3 * * *", timezone } }), at: () => "America/Argentina/ComodRivadavia", past: (n) => `Europe/${"x".repeat(n - 6)}` },
  { operation: ["put", "/v1/schedules/{name}"], field: "timezone", keyword: "pattern", send: (timezone: string) => ({ method: "PUT", url: "/v1/schedules/nightly", body: { queue: "q", cron: "0 3 * * *", timezone } }), at: () => "Etc/GMT+5", past: () => "Europe/Paris " },
  { operation: ["get", "/v1/jobs"], field: "?cursor", keyword: "maxLength", send: (cursor: string) => ({ method: "GET", url: `/v1/jobs?cursor=${encodeURIComponent(cursor)}` }), at: (n) => "z".repeat(n), past: (n) => "z".repeat(n + 1) },
  { operation: ["get", "/v1/jobs"], field: "?limit", keyword: "maximum", send: (limit: number) => ({ method: "GET", url: `/v1/jobs?limit=${limit}` }), at: (n) => n, past: (n) => n + 1 },
  { operation: ["get", "/v1/jobs/{id}/events"], field: "?cursor", keyword: "pattern", send: (cursor: string) => ({ method: "GET", url: `/v1/jobs/held/events?cursor=${cursor}` }), at: () => "9".repeat(15), past: () => "9".repeat(16) },
  { operation: ["get", "/v1/jobs/{id}"], field: "?waitMs", keyword: "maximum", send: (waitMs: number) => ({ method: "GET", url: `/v1/jobs/done?waitMs=${waitMs}` }), at: (n) => n, past: (n) => n + 1 },
];

let document: OpenApiDocument;
beforeAll(async () => {
  document = await servedDocument();
});

/** The schema of a field: `?name` a query parameter's, else the body's property of that name (in the items of an array body field, `jobs`, its own). */
function fieldSchema([method, path]: Bound["operation"], field: string): Schema {
  const operation = document.paths[path]![method]!;
  if (field.startsWith("?")) return operation.parameters!.find((parameter) => parameter.name === field.slice(1))!.schema as Schema;
  let schema = (operation.requestBody as { content: Record<string, { schema: Schema }> }).content["application/json"]!.schema;
  const components = (document.components as { schemas: Record<string, Schema> }).schemas;
  if (schema.$ref) schema = components[schema.$ref.split("/").at(-1)!]!;
  return schema.properties![field]!;
}

/** Whether the document calls the request valid: its body, or the query parameter under test. */
function validByDocument(bound: Bound, sent: Sent): { valid: boolean; errors: string } {
  const schemas = documentSchemas(document);
  const [method, path] = bound.operation;
  if (!bound.field.startsWith("?")) return schemas.body(path, method)(sent.body);
  const value = new URL(sent.url, "http://x").searchParams.get(bound.field.slice(1))!;
  const schema = fieldSchema(bound.operation, bound.field);
  return schemas.query(path, method, bound.field.slice(1))(schema.type === "integer" ? Number(value) : value);
}

/** A world where each request can succeed: a job held by A, a done job, a job due in queue q. */
async function world() {
  const fresh = await freshApp();
  await fresh.call("POST", "/v1/jobs", { id: "held" });
  await fresh.call("POST", "/v1/jobs/held/claim", { owner: "A", ttlMs: TTL });
  await fresh.call("POST", "/v1/jobs", { id: "done" });
  await fresh.call("POST", "/v1/jobs/done/claim", { owner: "A", ttlMs: TTL });
  await fresh.call("POST", "/v1/jobs/done/complete", { owner: "A", fence: 1, result: null });
  await fresh.call("POST", "/v1/jobs", { id: "due", queue: "q" });
  return fresh;
}

describe.each(BOUNDS)("$operation.1 $field, its $keyword", (bound) => {
  const limit = () => {
    const written = fieldSchema(bound.operation, bound.field)[bound.keyword];
    return typeof written === "number" ? written : Number.NaN; // a pattern has no number: the values are the row's own
  };

  test("at the bound: valid by the document, and taken", async () => {
    if (bound.keyword !== "pattern") expect(limit(), `the document writes ${bound.keyword}`).toBeGreaterThan(0);
    const sent = bound.send(bound.at(limit()) as never);
    if (bound.keyword !== "x-maxDepth") expect(validByDocument(bound, sent)).toEqual({ valid: true, errors: "[]" });
    const { call } = await world();
    const answer = await call(sent.method, sent.url, sent.body);
    expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBeLessThan(300);
  });

  test("just past it: invalid by the document, and refused naming the field", async () => {
    const sent = bound.send(bound.past(limit()) as never);
    if (bound.keyword !== "x-maxDepth") expect(validByDocument(bound, sent).valid).toBe(false);
    const { call, snapshot } = await world();
    const before = await snapshot();
    const answer = await call(sent.method, sent.url, sent.body);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe("invalid_request");
    expect(answer.body.error.message).toContain(bound.field.replace(/^\?/, ""));
    expect(await snapshot()).toEqual(before);
  });
});

describe("the W3C trace context's patterns", () => {
  const traceparent = fc
    .tuple(fc.constantFrom("00", "01", "fe", "ff", "0g"), fc.constantFrom(TRACE, "0".repeat(32), TRACE.toUpperCase(), TRACE.slice(1)), fc.constantFrom(SPAN, "0".repeat(16)), fc.constantFrom("01", "00", "1", "f0"), fc.constantFrom("", "-", "-x", "x", "-\u0001"))
    .map(([version, trace, span, flags, rest]) => `${version}-${trace}-${span}-${flags}${rest}`);
  const member = fc
    .tuple(fc.constantFrom("a", "k1", "a@b", "1a", "1a@b", "A", "", "a b", "x/y*_-", "a".repeat(257)), fc.constantFrom("=", "", "=="), fc.constantFrom("v", "v v", "v ", "", ",", "é", "v\tv", "v".repeat(257)))
    .map(([key, equals, value]) => `${key}${equals}${value}`);
  const tracestate = fc
    .tuple(fc.array(member, { maxLength: 34 }), fc.constantFrom(",", " , ", ",,", "\t,", ", "))
    .map(([members, separator]) => members.join(separator));

  test("on random near-valid texts, what the document's pattern calls valid the server takes, and what it calls invalid the server refuses", async () => {
    const valid = documentSchemas(document).body("/v1/jobs", "post");
    const { call } = await freshApp();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(traceparent, fc.option(tracestate, { nil: undefined }), async (parent, state) => {
        const body = { id: `trace-${n++}`, traceparent: parent, ...(state !== undefined && { tracestate: state }) };
        const byDocument = valid(body).valid;
        const answer = await call("POST", "/v1/jobs", body);
        expect(answer.status === 201, `${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`).toBe(byDocument);
      }),
      { numRuns: 300 },
    );
  });
});
