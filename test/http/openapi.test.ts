import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { describe, expect, onTestFinished, test, vi } from "vitest";
import { createApp } from "../../src/index.ts";
import { LeaseStore } from "../../src/store/store.ts";
import { freshApp, TOKEN } from "../fresh-app.ts";

// The OpenAPI document says everything the server enforces and answers, so
// that a client generated from it (here by openapi-typescript) meets no
// surprise: every operation tagged by resource with an operationId, the
// rules of every field, and every field an answer always has marked required.

type Schema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  pattern?: string;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  [key: string]: unknown;
};
type Operation = {
  tags?: string[];
  operationId?: string;
  security?: unknown[];
  parameters?: { name: string; in: string; schema: Schema }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
};
type Document = {
  servers?: { url: string }[];
  tags?: { name: string; description?: string }[];
  security?: unknown[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

const TTL = 30_000;

async function openApiDocument(): Promise<Document> {
  const { body } = await (await freshApp()).call("GET", "/openapi.json");
  return body;
}

function operations(document: Document): { method: string; path: string; operation: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ method, path, operation })));
}

function resolve(document: Document, schema: Schema): Schema {
  return schema.$ref ? document.components.schemas[schema.$ref.replace("#/components/schemas/", "")]! : schema;
}

/** Every property of every object in `schema` that is not required, as "where.property". */
function optionalFields(document: Document, schema: Schema, where: string, seen = new Set<Schema>()): string[] {
  const resolved = resolve(document, schema);
  if (seen.has(resolved)) return [];
  seen.add(resolved);
  const here = schema.$ref ? schema.$ref.replace("#/components/schemas/", "") : where;
  const inner = [...(resolved.anyOf ?? []), ...(resolved.oneOf ?? []), ...(resolved.allOf ?? []), ...(resolved.items ? [resolved.items] : [])]
    .flatMap((part) => optionalFields(document, part, here, seen));
  const own = Object.entries(resolved.properties ?? {}).flatMap(([name, property]) => [
    ...(resolved.required?.includes(name) ? [] : [`${here}.${name}`]),
    ...optionalFields(document, property, `${here}.${name}`, seen),
  ]);
  return [...own, ...inner];
}

describe("the OpenAPI document", () => {
  test("tags every operation by its resource and gives it a unique operationId; servers; only /healthz needs no token", async () => {
    const document = await openApiDocument();
    expect(document.tags!.map((tag) => tag.name)).toEqual(["jobs", "leases", "queues", "push", "schedules", "tokens", "system"]);
    for (const tag of document.tags!) expect(tag.description, tag.name).toEqual(expect.stringMatching(/\w/));
    expect(document.servers).toEqual([expect.objectContaining({ url: "/" })]);
    expect(document.security).toEqual([{ bearer: [] }]);
    const all = operations(document);
    expect(all.length).toBe(42);
    for (const { method, path, operation } of all) {
      expect(operation.tags, `${method} ${path}`).toHaveLength(1);
      expect(document.tags!.map((tag) => tag.name), `${method} ${path}`).toContain(operation.tags![0]);
      expect(operation.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]+$/);
      expect(operation.security, `${method} ${path}`).toEqual(path === "/healthz" ? [] : undefined);
    }
    expect(new Set(all.map(({ operation }) => operation.operationId)).size).toBe(all.length);
    const byTag = (tag: string) => all.filter(({ operation }) => operation.tags![0] === tag).map(({ operation }) => operation.operationId).sort();
    expect(byTag("jobs")).toEqual(["bulkJobs", "cancelJob", "deleteJob", "enqueueJob", "enqueueJobs", "getJob", "listJobEvents", "listJobs", "retryJob"]);
    expect(byTag("leases")).toEqual(["checkLease", "claimJob", "claimNext", "completeLease", "completeLeases", "failLease", "recordStep", "releaseLease", "renewLease", "renewLeases"]);
    expect(byTag("push")).toEqual(["deletePush", "getPush", "listPush", "rotatePushSecret", "setPush"]);
    expect(byTag("system")).toEqual(["getHealth", "getMetrics"]);
    expect(byTag("tokens")).toEqual(["createToken", "getTokenSelf", "listTokens", "revokeToken"]);
  });

  test("marks required every field an answer always has: the only optional ones are those the server leaves out", async () => {
    const document = await openApiDocument();
    const optional = new Set(
      operations(document).flatMap(({ operation }) =>
        Object.entries(operation.responses).flatMap(([status, response]) =>
          Object.values(response.content ?? {}).flatMap(({ schema }) => optionalFields(document, schema, `${operation.operationId} ${status}`)))),
    );
    expect([...optional].sort()).toEqual([
      "Error.error.details", // only some errors have details, and some refusals of a many-lease call
      "completeLease 200.leases", // only with next
      "CompleteManyAnswer.completed.error.details",
      "failLease 200.leases",
      "RenewManyAnswer.leases.error.details",
      "claimNext 200.retryAfterMs", // only when the rate limit stopped the claim short
      "claimNext 200.waitedMs", // only with waitMs
      "checkLease 200.reason", // only when the lease is not current
      "checkLease 200.supersededBy", // only when a supersede cancelled the job
      "enqueueJob 200.debounced", // only when the enqueue moved its key's waiting job
      "enqueueJob 200.deduplicated", // only when its key's window turned it away
      "enqueueJob 201.superseded", // only with supersede
      "enqueueJobs 200.jobs.deduplicated", // only when its key's window, or a job before it, turned it away
      "enqueueJobs 200.jobs.duplicateOf",
      "NotClaimable.error.details.behind", // only with reason key_ordered
    ].sort());
    expect(document.components.schemas.Job!.required).toEqual(expect.arrayContaining(["payload", "result", "progress"]));
  });

  test("writes the rules of ids, owners, queues and names as maxLength and pattern, and says in words what they cannot (bytes)", async () => {
    const document = await openApiDocument();
    const enqueue = resolve(document, document.paths["/v1/jobs"]!.post!.requestBody!.content["application/json"]!.schema);
    const idRule = enqueue.properties!.id!;
    const claimNext = document.paths["/v1/queues/{queue}/claim"]!.post!;
    const nameRule = document.paths["/v1/schedules/{name}"]!.put!.parameters!.find((parameter) => parameter.name === "name")!.schema;
    for (const rule of [idRule, enqueue.properties!.queue!, claimNext.parameters![0]!.schema, resolve(document, claimNext.requestBody!.content["application/json"]!.schema).properties!.owner!]) {
      expect(rule).toMatchObject({ type: "string", minLength: 1, maxLength: 255, pattern: idRule.pattern });
      expect(rule.description).toContain("255 bytes of UTF-8");
    }
    expect(nameRule).toMatchObject({ maxLength: 230 });
    expect(nameRule.description).toContain("230 bytes of UTF-8");

    // The pattern refuses what the server refuses, but for what only bytes can tell (length, lone surrogates).
    const { call } = await freshApp();
    const id = new RegExp(idRule.pattern!, "u");
    const name = new RegExp(nameRule.pattern!, "u");
    for (const sample of ["invoice-42", "é ü 中文 🎉", "a.b", "...", ".", "..", "a\nb", "a\tb", "a\u0000b", "a\u0085b", "a\u202eb", "a\u2028b", "a@b", "@"]) {
      const accepted = (await call("POST", "/v1/jobs", { id: sample })).status < 300;
      expect(id.test(sample), JSON.stringify(sample)).toBe(accepted);
      const named = (await call("PUT", `/v1/schedules/${encodeURIComponent(sample)}`, { queue: "q", everyMs: 60_000 })).status < 300;
      expect(name.test(sample), `schedule ${JSON.stringify(sample)}`).toBe(named);
    }
  });

  test("writes the bounds of limit, waitMs and fence, and which fields go together or exclude each other", async () => {
    const document = await openApiDocument();
    const body = (path: string, method: string) => resolve(document, document.paths[path]![method]!.requestBody!.content["application/json"]!.schema);
    const query = (path: string, name: string) => document.paths[path]!.get!.parameters!.find((parameter) => parameter.name === name)!.schema;

    expect(body("/v1/queues/{queue}/claim", "post").properties).toMatchObject({ limit: { minimum: 1, maximum: 100 }, waitMs: { minimum: 0, maximum: 30_000 } });
    expect(body("/v1/jobs/{id}/renew", "post").properties!.fence).toMatchObject({ type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
    expect(query("/v1/jobs", "limit")).toMatchObject({ type: "integer", minimum: 1, maximum: 100 });
    expect(query("/v1/jobs/{id}/events", "limit")).toMatchObject({ type: "integer", minimum: 1, maximum: 1000 });
    expect(query("/v1/jobs/{id}", "waitMs")).toMatchObject({ type: "integer", minimum: 0, maximum: 30_000 });
    expect(query("/v1/jobs/{id}/lease", "fence")).toMatchObject({ type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER });

    expect(body("/v1/jobs", "post")).toMatchObject({ not: { required: ["runAt", "delayMs"] }, additionalProperties: false });
    expect(resolve(document, body("/v1/queues/{queue}/jobs", "post").properties!.jobs!.items!)).toMatchObject({ not: { required: ["runAt", "delayMs"] } });
    expect(body("/v1/schedules/{name}", "put")).toMatchObject({ oneOf: [{ required: ["cron"] }, { required: ["everyMs"] }], dependentRequired: { timezone: ["cron"] } });
    expect(body("/v1/queues/{queue}", "put")).toMatchObject({
      allOf: [
        { if: { properties: { burst: { type: "integer" } }, required: ["burst"] }, then: { properties: { ratePerSecond: { type: "number" } }, required: ["ratePerSecond"] } },
        { if: { properties: { keyBurst: { type: "integer" } }, required: ["keyBurst"] }, then: { properties: { keyRatePerSecond: { type: "number" } }, required: ["keyRatePerSecond"] } },
      ],
    });
  });

  test("declares a 500 on every operation, a required WWW-Authenticate on every 401 and a required Retry-After on every 429 and 503", async () => {
    const document = await openApiDocument();
    const all = operations(document);
    const missing: string[] = [];
    for (const { method, path, operation } of all) {
      const where = `${method} ${path}`;
      const responses = operation.responses as Record<string, { headers?: Record<string, { required?: boolean; schema?: Schema }>; content?: Record<string, { schema: Schema }> }>;
      if (responses["500"]?.content?.["application/json"]?.schema.$ref !== "#/components/schemas/Error") missing.push(`${where} 500`);
      if (responses["401"] && responses["401"].headers?.["WWW-Authenticate"]?.required !== true) missing.push(`${where} 401 WWW-Authenticate`);
      for (const status of ["429", "503"]) {
        if (responses[status] && (responses[status].headers?.["Retry-After"]?.required !== true || responses[status].headers["Retry-After"].schema?.type !== "integer")) missing.push(`${where} ${status} Retry-After`);
      }
    }
    expect(missing).toEqual([]);
    expect(all.filter(({ operation }) => "401" in operation.responses).length).toBe(all.length - 1); // all but /healthz
    expect(all.filter(({ operation }) => "503" in operation.responses).length).toBe(all.length);
  });

  test("the headers it declares are the ones the server sends: WWW-Authenticate on a 401, Retry-After on every kind of 503, and a 500 in the Error shape", async () => {
    const { app, store } = await freshApp();
    const refused = await app.request("/v1/stats", { headers: { Authorization: "Bearer wrong" } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("WWW-Authenticate")).toBe('Bearer realm="fencelease"');

    const unconfigured = await (await freshApp({ auth: { tokens: [] } })).app.request("/v1/stats");
    expect(unconfigured.status).toBe(503);
    expect(unconfigured.headers.get("Retry-After")).toMatch(/^\d+$/);

    const unexpected = createApp({ store: new LeaseStore({ run: () => Promise.reject(new Error("a bug")), batch: () => Promise.reject(new Error("a bug")), close() {} }), auth: "off" });
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const failed = await unexpected.request("http://localhost/v1/stats");
      expect(failed.status).toBe(500);
      expect(await failed.json()).toEqual({ error: { code: "internal_error", message: "internal error" } });
    } finally {
      logged.mockRestore();
    }

    store.close(); // the database gone: every route that reads it answers 503
    const gone = await app.request("/v1/stats", { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(gone.status).toBe(503);
    expect(gone.headers.get("Retry-After")).toMatch(/^\d+$/);
  });

  test("names the depth every JSON value a request sends may nest, 64 levels, as x-maxDepth and in words", async () => {
    const document = await openApiDocument();
    const body = (path: string, method: string) => resolve(document, document.paths[path]![method]!.requestBody!.content["application/json"]!.schema);
    const values = [
      body("/v1/jobs", "post").properties!.payload!,
      resolve(document, body("/v1/queues/{queue}/jobs", "post").properties!.jobs!.items!).properties!.payload!,
      body("/v1/jobs/{id}/renew", "post").properties!.progress!,
      resolve(document, body("/v1/leases/renew", "post").properties!.leases!.items!).properties!.progress!,
      body("/v1/jobs/{id}/complete", "post").properties!.result!,
      body("/v1/jobs/{id}/steps/{name}", "post").properties!.result!,
      resolve(document, body("/v1/leases/complete", "post").properties!.leases!.items!).properties!.result!,
      body("/v1/schedules/{name}", "put").properties!.payload!,
    ];
    for (const value of values) {
      expect(value["x-maxDepth"]).toBe(64);
      expect(value.description).toContain("At most 64 levels of arrays and objects deep");
    }
  });
});

/** Each operation's answer in a world that gives every one of them: its operationId, status and JSON body. */
async function answers(): Promise<{ operationId: string; status: number; body: unknown }[]> {
  const { call, clock, store } = await freshApp();
  const seen: { operationId: string; status: number; body: unknown }[] = [];
  const as = async (operationId: string, method: string, path: string, body?: unknown) => {
    const answer = await call(method, path, body);
    expect(answer.status, `${operationId}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
    if (answer.status !== 204) seen.push({ operationId, status: answer.status, body: answer.body });
    return answer.body;
  };
  await as("enqueueJob", "POST", "/v1/jobs", { id: "a", queue: "q", payload: { n: 1 }, maxAttempts: 1 });
  await as("enqueueJob", "POST", "/v1/jobs", { id: "a", queue: "q" });
  await as("enqueueJobs", "POST", "/v1/queues/q/jobs", { jobs: [{ id: "b" }, { id: "c", delayMs: 5 }, { id: "d" }, { id: "e" }] });
  await as("claimJob", "POST", "/v1/jobs/a/claim", { owner: "A", ttlMs: TTL });
  await as("renewLease", "POST", "/v1/jobs/a/renew", { owner: "A", fence: 1, ttlMs: TTL, progress: { pct: 50 } });
  await as("checkLease", "GET", "/v1/jobs/a/lease?owner=A&fence=1");
  await as("recordStep", "POST", "/v1/jobs/a/steps/charge", { owner: "A", fence: 1, result: { charge: "ch_1" } });
  await as("recordStep", "POST", "/v1/jobs/a/steps/charge", { owner: "A", fence: 1, result: { charge: "ch_2" } });
  await as("completeLease", "POST", "/v1/jobs/a/complete", { owner: "A", fence: 1, result: { ok: true }, next: { limit: 1, ttlMs: TTL } });
  await as("completeLease", "POST", "/v1/jobs/a/complete", { owner: "A", fence: 1, result: { ok: true } });
  await as("claimNext", "POST", "/v1/queues/q/claim", { owner: "B", ttlMs: TTL, limit: 1, waitMs: 10 });
  await as("renewLeases", "POST", "/v1/leases/renew", { owner: "A", ttlMs: TTL, leases: [{ id: "b", fence: 1 }, { id: "d", fence: 9 }] });
  await as("releaseLease", "POST", "/v1/jobs/b/release", { owner: "A", fence: 1 });
  await as("claimJob", "POST", "/v1/jobs/b/claim", { owner: "A", ttlMs: TTL });
  await as("failLease", "POST", "/v1/jobs/b/fail", { owner: "A", fence: 2, error: "boom", retryInMs: 0, next: { limit: 1, ttlMs: TTL } });
  await as("completeLeases", "POST", "/v1/leases/complete", { owner: "B", leases: [{ id: "d", fence: 1, result: 1 }, { id: "e", fence: 7, result: 2 }], next: { queue: "q", limit: 1, ttlMs: TTL } });
  await as("getJob", "GET", "/v1/jobs/a");
  await as("getJob", "GET", "/v1/jobs/a?waitMs=10");
  await as("listJobs", "GET", "/v1/jobs?limit=2");
  await as("listJobEvents", "GET", "/v1/jobs/a/events");
  await as("enqueueJob", "POST", "/v1/jobs", { id: "dies", maxAttempts: 1 });
  await as("claimJob", "POST", "/v1/jobs/dies/claim", { owner: "A", ttlMs: TTL });
  await as("failLease", "POST", "/v1/jobs/dies/fail", { owner: "A", fence: 1, error: "last" });
  await as("retryJob", "POST", "/v1/jobs/dies/retry");
  await as("cancelJob", "POST", "/v1/jobs/dies/cancel", { by: "ops", reason: "not needed" });
  await as("deleteJob", "DELETE", "/v1/jobs/dies");
  await as("enqueueJob", "POST", "/v1/jobs", { id: "w-1", queue: "once", dedupKey: "order-7", dedupTtlMs: 60_000 });
  await as("enqueueJob", "POST", "/v1/jobs", { id: "w-2", queue: "once", dedupKey: "order-7", dedupTtlMs: 60_000 });
  await as("enqueueJobs", "POST", "/v1/queues/once/jobs", { jobs: [{ id: "w-3", dedupKey: "order-7", dedupTtlMs: 60_000 }, { id: "w-4" }] });
  await as("enqueueJob", "POST", "/v1/jobs", { id: "b-1", queue: "once", dedupKey: "doc", debounceMs: 1_000 });
  await as("enqueueJob", "POST", "/v1/jobs", { id: "b-2", queue: "once", dedupKey: "doc", debounceMs: 1_000, payload: 2 });
  await as("enqueueJob", "POST", "/v1/jobs", { id: "s-1", queue: "once", dedupKey: "sync", supersede: true });
  await as("enqueueJob", "POST", "/v1/jobs", { id: "s-2", queue: "once", dedupKey: "sync", supersede: true });
  await as("bulkJobs", "POST", "/v1/jobs/bulk", { action: "retry", filter: { queue: "once" }, dryRun: true });
  await as("bulkJobs", "POST", "/v1/jobs/bulk", { action: "cancel", filter: { queue: "once", status: ["queued", "scheduled"] } });
  await as("bulkJobs", "POST", "/v1/jobs/bulk", { action: "delete", filter: { queue: "once" } });
  // The window's job deleted: the window answers its id alone.
  expect(await as("enqueueJob", "POST", "/v1/jobs", { id: "s-3", queue: "once", dedupKey: "order-7", dedupTtlMs: 60_000 })).toEqual({ created: false, deduplicated: true, id: "w-1" });
  await as("setQueue", "PUT", "/v1/queues/q", { maxLeased: 5, ratePerSecond: 2, burst: 4 });
  await as("pauseQueue", "POST", "/v1/queues/q/pause");
  await as("resumeQueue", "POST", "/v1/queues/q/resume");
  await as("getQueue", "GET", "/v1/queues/q");
  await as("listQueues", "GET", "/v1/queues");
  await store.enqueueMany("keyed", { jobs: [{ id: "k-1", key: "acme" }, { id: "k-2", key: "acme" }, { id: "k-3", key: "beta" }], now: clock.now });
  await store.queues.set("keyed", { maxLeasedPerKey: 1, now: clock.now });
  await as("claimJob", "POST", "/v1/jobs/k-1/claim", { owner: "A", ttlMs: TTL });
  await as("getStats", "GET", "/v1/stats");
  await as("listQueueKeys", "GET", "/v1/queues/keyed/keys?limit=1");
  await as("getQueueSeries", "GET", "/v1/queues/q/series?step=3600000");
  await as("setPush", "PUT", "/v1/queues/q/push", { url: "https://push.example/q", maxInFlight: 2 });
  await as("setPush", "PUT", "/v1/queues/q/push", { url: "https://push.example/q", timeoutMs: 5_000 });
  await as("getPush", "GET", "/v1/queues/q/push");
  await as("listPush", "GET", "/v1/push");
  await as("rotatePushSecret", "POST", "/v1/queues/q/push/rotate");
  await as("deletePush", "DELETE", "/v1/queues/q/push");
  await as("putSchedule", "PUT", "/v1/schedules/nightly", { queue: "q", cron: "0 3 * * *", timezone: "Europe/Paris", payload: { report: true } });
  await as("putSchedule", "PUT", "/v1/schedules/nightly", { queue: "q", everyMs: 60_000 });
  await as("getSchedule", "GET", "/v1/schedules/nightly");
  await as("listSchedules", "GET", "/v1/schedules");
  await as("deleteSchedule", "DELETE", "/v1/schedules/nightly");
  const { id } = (await as("createToken", "POST", "/v1/tokens", { role: "worker", queues: ["q", "mail-*"], name: "billing" })) as { id: string };
  await as("listTokens", "GET", "/v1/tokens");
  await as("getTokenSelf", "GET", "/v1/tokens/self");
  await as("revokeToken", "DELETE", `/v1/tokens/${id}`);
  await as("getHealth", "GET", "/healthz");
  clock.now += 1;
  return seen;
}

/** Type-checks `files` (name to text) together, strictly; the errors, each as "file(line): message". */
function typeErrors(dir: string, files: Record<string, string>): string[] {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const options: ts.CompilerOptions = {
    strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true, types: [], lib: ["lib.es2022.d.ts"], exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true,
  };
  const program = ts.createProgram(Object.keys(files).map((name) => join(dir, name)), options);
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where = diagnostic.file ? `${diagnostic.file.fileName.slice(dir.length + 1)}(${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start!).line + 1})` : "";
    return `${where}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")}`;
  });
}

describe("a client generated from the document by openapi-typescript", () => {
  test("types every real answer of every operation exactly (no field missing, none unknown), and the requests a client sends", async () => {
    const document = await openApiDocument();
    const generated = astToString(await openapiTS(document as never));
    const real = await answers();
    expect(new Set(real.map(({ operationId }) => operationId)).size).toBe(39); // all but the 204s of deleteSchedule and deletePush and the text of getMetrics

    const use = [
      'import type { components, operations } from "./api.ts";',
      "type Answer<Id extends keyof operations, Status extends keyof operations[Id][\"responses\"]> = operations[Id][\"responses\"][Status] extends { content: { \"application/json\": infer Body } } ? Body : never;",
      "type Body<Id extends keyof operations> = operations[Id] extends { requestBody?: { content: { \"application/json\": infer B } } } ? B : never;",
      "type OptionalKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? K : never }[keyof T];",
      "const none = <T>(check: [T] extends [never] ? true : T) => check;",
      // Each real answer, as an object literal: a field the types lack fails as an excess property, a missing required one as missing.
      ...real.map(({ operationId, status, body }, i) => `export const answer${i}: Answer<"${operationId}", ${status}> = ${JSON.stringify(body)};`),
      // What answers always have is required in the types too.
      'none<OptionalKeys<components["schemas"]["Job"]>>(true);',
      'none<OptionalKeys<components["schemas"]["Lease"]>>(true);',
      'none<OptionalKeys<components["schemas"]["Step"]>>(true);',
      'none<OptionalKeys<components["schemas"]["Event"]>>(true);',
      'none<OptionalKeys<components["schemas"]["Schedule"]>>(true);',
      'none<OptionalKeys<components["schemas"]["QueueSettings"]>>(true);',
      'none<OptionalKeys<components["schemas"]["PushSettings"]>>(true);',
      'none<OptionalKeys<components["schemas"]["KeyStats"]>>(true);',
      'none<Exclude<OptionalKeys<Answer<"claimNext", 200>>, "waitedMs" | "retryAfterMs">>(true);',
      // Requests as a client writes them.
      'export const enqueue: Body<"enqueueJob"> = { id: "x", queue: "q", payload: { any: ["json"] }, delayMs: 5 };',
      'export const once: Body<"enqueueJob"> = { id: "x", queue: "q", dedupKey: "order-7", dedupTtlMs: 60000 };',
      'export const debounced: Body<"enqueueJob"> = { id: "x", dedupKey: "doc", debounceMs: 500, debounceMaxMs: 5000 };',
      'export const claim: Body<"claimNext"> = { owner: "A", ttlMs: 30000, limit: 10, waitMs: 1000 };',
      'export const complete: Body<"completeLease"> = { owner: "A", fence: 1, result: null, next: { limit: 1, ttlMs: 30000 } };',
      'export const step: Body<"recordStep"> = { owner: "A", fence: 1, result: { charge: "ch_1" } };',
      'export const cron: Body<"putSchedule"> = { queue: "q", cron: "0 3 * * *", timezone: "UTC" };',
      'export const every: Body<"putSchedule"> = { queue: "q", everyMs: 60000 };',
      'export const token: Body<"createToken"> = { role: "reader", queues: ["*"] };',
      "// @ts-expect-error a role the API does not have",
      'export const root: Body<"createToken"> = { role: "root", queues: ["*"] };',
      'export const cancelNeedsNoBody: {} extends Pick<operations["cancelJob"], "requestBody"> ? true : false = true;',
      'export const claimNeedsABody: {} extends Pick<operations["claimJob"], "requestBody"> ? false : true = true;',
      // The checks above can fail: an answer with a field the document lacks, or without one it requires, does not type-check.
      "// @ts-expect-error a field the document does not have",
      'export const surprise: Answer<"getJob", 200> = { ...answer0.job, surprise: 1 };',
      "const { payload: _, ...withoutPayload } = answer0.job;",
      "// @ts-expect-error a job without its payload",
      'export const missing: components["schemas"]["Job"] = withoutPayload;',
      // The lines expected to fail prove the types refuse what the server refuses.
      "// @ts-expect-error an unknown field",
      'export const unknownField: Body<"claimJob"> = { owner: "A", ttlMs: 1, now: 0 };',
      "// @ts-expect-error a claim without an owner",
      'export const noOwner: Body<"claimJob"> = { ttlMs: 1 };',
      "// @ts-expect-error a status the API does not have",
      'export const status: components["schemas"]["Job"]["status"] = "running";',
    ].join("\n");

    const dir = mkdtempSync(join(tmpdir(), "fencelease-openapi-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    expect(typeErrors(dir, { "api.ts": generated, "use.ts": use })).toEqual([]);
  }, 60_000);
});
