import { createClient } from "@libsql/client";
import fc from "fast-check";
import { describe, expect, onTestFinished, test } from "vitest";
import { T, TOKEN, freshApp } from "../fresh-app.ts";

// Random and malformed requests against the real app on a real database: any
// method, path, query, headers and body. None may answer a 5xx, every refusal
// is the error JSON, and a refused request (any non-2xx), like any GET or HEAD,
// leaves the database as it was: the jobs, the fence floor and the events,
// except the one record a refused write with a lease adds to the history by
// design ('refused'). On a failure fast-check prints the shortest request it
// found, with the seed to replay it.

const MAX_BODY = 2048; // small, so that a 413 is within reach

const IDS = ["open", "held", "done", "expired", "missing"];
const segment = fc.oneof(
  { arbitrary: fc.constantFrom(...IDS), weight: 6 },
  { arbitrary: fc.constantFrom("%", "%zz", "%E0%A4%A", "%00", "..", ".", "%2F", "a%20b", "ü", "😀", "\u0000", "x".repeat(300)), weight: 2 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 12 }).map(encodeURIComponent), weight: 1 },
  { arbitrary: fc.string({ maxLength: 12 }), weight: 1 },
);
const path = fc.oneof(
  { arbitrary: fc.tuple(segment, fc.constantFrom("claim", "renew", "complete", "release", "fail", "retry", "events", "lease", "")).map(([id, verb]) => `/v1/jobs/${id}${verb && `/${verb}`}`), weight: 6 },
  { arbitrary: fc.tuple(segment, fc.constantFrom("claim", "jobs")).map(([queue, verb]) => `/v1/queues/${queue}/${verb}`), weight: 2 },
  { arbitrary: fc.constantFrom("/v1/leases/renew", "/v1/leases/complete", "/v1/leases", "/v1/leases/release"), weight: 1 },
  { arbitrary: fc.constantFrom("/v1/jobs", "/v1/jobs/", "/v1/stats", "/metrics", "/healthz", "/openapi.json", "/docs", "/", "/v1", "/v1/queues//claim", "//v1/jobs", "/v1/jobs/open/claim/extra"), weight: 2 },
  { arbitrary: fc.webPath(), weight: 1 },
).chain((p) => fc.oneof(fc.constant(p), query.map((q) => `${p}?${q}`), fc.constant(`${p}#frag`)));

// Query strings for the routes that read them (list, events, lease), and for those that do not.
const query = fc
  .array(
    fc.tuple(
      fc.constantFrom("queue", "status", "limit", "cursor", "owner", "fence", "x", "limit"),
      fc.oneof(fc.constantFrom("", "0", "1", "-1", "100", "101", "1.5", "9007199254740993", "held", "queued", "dead", "A", "%zz", "a&b=c"), fc.string({ maxLength: 6 })),
    ),
    { maxLength: 3 },
  )
  .map((pairs) => pairs.map(([key, value]) => `${key}=${value}`).join("&"));

const method = fc.oneof(
  { arbitrary: fc.constantFrom("POST", "GET"), weight: 6 },
  { arbitrary: fc.constantFrom("PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "post", "get", "PROPFIND", "X"), weight: 2 },
);

// Values of every JSON type, with the edges a schema meets: 0, negatives, fractions, huge numbers, long strings.
const tricky = fc.oneof(
  fc.constantFrom(0, -1, 1, 2, 1.5, 2 ** 53, -(2 ** 53), 1e308, 3_600_000, 3_600_001, "", "A", "B", "x".repeat(256), null, true, [], {}),
  fc.jsonValue({ maxDepth: 2 }),
);
const FIELDS = ["id", "owner", "ttlMs", "fence", "result", "limit", "queue", "payload", "priority", "runAt", "delayMs", "maxAttempts", "next", "jobs", "leases", "extra"];
const owner = fc.constantFrom("A", "B");
const ttlMs = fc.constantFrom(1, 10, 60_000);
const fence = fc.constantFrom(1, 2, 3);
// The body each route expects, with values that meet the jobs above.
const next = fc.record({ limit: fc.constantFrom(1, 2, 100), ttlMs });
const heldId = fc.constantFrom(...IDS);
const SHAPES = {
  "/claim": fc.record({ owner, ttlMs }),
  "/renew": fc.record({ owner, fence, ttlMs }),
  "/complete": fc.record({ owner, fence, result: fc.jsonValue({ maxDepth: 1 }), next }, { requiredKeys: ["owner", "fence", "result"] }),
  "/release": fc.record({ owner, fence }),
  "/fail": fc.record({ owner, fence, error: fc.string({ maxLength: 10 }), retryInMs: fc.constantFrom(0, 10), next }, { requiredKeys: ["owner", "fence", "error"] }),
  renewMany: fc.record({ owner, ttlMs, leases: fc.array(fc.record({ id: heldId, fence }), { minLength: 1, maxLength: 4 }) }),
  completeMany: fc.record(
    { owner, leases: fc.array(fc.record({ id: heldId, fence, result: fc.jsonValue({ maxDepth: 1 }) }), { minLength: 1, maxLength: 4 }), next: next.map((take) => ({ ...take, queue: "default" })) },
    { requiredKeys: ["owner", "leases"] },
  ),
  enqueueMany: fc.record({ jobs: fc.array(fc.record({ id: fc.oneof(heldId, fc.string({ minLength: 1, maxLength: 8 })), payload: fc.jsonValue({ maxDepth: 1 }), delayMs: fc.constantFrom(0, 10) }, { requiredKeys: ["id"] }), { minLength: 1, maxLength: 4 }) }),
  queue: fc.record({ owner, ttlMs, limit: fc.constantFrom(1, 2, 100) }, { requiredKeys: ["owner", "ttlMs"] }),
  enqueue: fc.record(
    { id: fc.oneof(fc.constantFrom(...IDS), fc.string({ minLength: 1, maxLength: 8 })), queue: fc.constantFrom("default", "held"), payload: fc.jsonValue({ maxDepth: 1 }), priority: fc.integer({ min: -2, max: 2 }), delayMs: fc.constantFrom(0, 10) },
    { requiredKeys: ["id"] },
  ),
};
/** A body of the right shape, then now and then spoiled: a field of the wrong type, an unknown one, one missing. */
function shapedLike(shape: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<string> {
  return fc
    .tuple(shape, fc.dictionary(fc.constantFrom(...FIELDS), tricky, { maxKeys: 2 }), fc.nat(3))
    .map(([base, changed, drop]) => {
      const body: Record<string, unknown> = drop === 0 ? { ...base, ...changed } : { ...base };
      if (drop === 1) delete body[Object.keys(body)[0]!];
      return JSON.stringify(body);
    });
}
const shaped = fc.oneof(...Object.values(SHAPES).map(shapedLike));

/** A request much like a real one: the right method, path and headers, and a body of its route's shape, sometimes spoiled. */
const plausible = fc.oneof(
  fc.tuple(fc.constantFrom(...IDS), fc.constantFrom("/claim", "/renew", "/complete", "/release", "/fail") as fc.Arbitrary<"/claim">).chain(([id, verb]) =>
    fc.record({ path: fc.constant(`/v1/jobs/${id}${verb}`), body: shapedLike(SHAPES[verb]) }),
  ),
  fc.record({ path: fc.constantFrom("/v1/queues/default/claim", "/v1/queues/held/claim"), body: shapedLike(SHAPES.queue) }),
  fc.record({ path: fc.constant("/v1/jobs"), body: shapedLike(SHAPES.enqueue) }),
  fc.record({ path: fc.constant("/v1/leases/renew"), body: shapedLike(SHAPES.renewMany) }),
  fc.record({ path: fc.constant("/v1/leases/complete"), body: shapedLike(SHAPES.completeMany) }),
  fc.record({ path: fc.constantFrom("/v1/queues/default/jobs", "/v1/queues/held/jobs"), body: shapedLike(SHAPES.enqueueMany) }),
).chain(({ path, body }) =>
  fc.record({
    method: fc.constant("POST"),
    path: fc.constant(path),
    headers: fc.constantFrom<Record<string, string>>(
      { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      { Authorization: `Bearer ${TOKEN}`, "Content-Type": "text/plain" },
      { "Content-Type": "application/json" },
    ),
    body: fc.constant(body),
  }),
);
const body = fc.oneof(
  { arbitrary: shaped, weight: 6 },
  { arbitrary: fc.json({ maxDepth: 2 }), weight: 2 },
  { arbitrary: shaped.chain((text) => fc.nat(text.length).map((n) => text.slice(0, n))), weight: 1 }, // cut short
  { arbitrary: fc.string({ unit: "binary", maxLength: 40 }), weight: 1 },
  { arbitrary: fc.constantFrom("", "{", "null", "[]", '{"owner":"A","ttlMs":1000,"owner":"B"}', "\uFEFF{}", `{"id":"${"y".repeat(MAX_BODY)}"}`), weight: 1 },
  { arbitrary: fc.uint8Array({ maxLength: 40 }), weight: 1 },
);

const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 30 });
const headers = fc.record(
  {
    Authorization: fc.oneof(
      { arbitrary: fc.constant(`Bearer ${TOKEN}`), weight: 6 },
      { arbitrary: fc.constantFrom("Bearer wrong", `bearer ${TOKEN}`, `Bearer  ${TOKEN} `, `Basic ${TOKEN}`, "Bearer", ""), weight: 2 },
      { arbitrary: printable, weight: 1 },
    ),
    "Content-Type": fc.oneof(
      { arbitrary: fc.constant("application/json"), weight: 6 },
      { arbitrary: fc.constantFrom("application/json; charset=utf-8", "application/problem+json", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "APPLICATION/JSON", ""), weight: 2 },
      { arbitrary: printable, weight: 1 },
    ),
    Accept: fc.constantFrom("*/*", "text/html", "application/xml"),
    "X-Anything": printable,
  },
  { requiredKeys: [] },
);

const wild = fc.record({ method, path, headers, body: fc.option(body, { nil: undefined, freq: 4 }) });
const request = fc.record({
  sent: fc.oneof({ arbitrary: plausible, weight: 2 }, { arbitrary: wild, weight: 1 }) as fc.Arbitrary<{ method: string; path: string; headers: Record<string, string>; body: string | Uint8Array | undefined }>,
  tick: fc.constantFrom(0, 0, 1, 500, 60_000),
});

type Snapshot = { jobs: Record<string, unknown>[]; floor: Record<string, unknown>[]; events: Record<string, unknown>[] };

/** The one job that died between two snapshots, if every other job and table is as it was. */
function deadIn(before: Snapshot, after: Snapshot): { row: Record<string, unknown> } | undefined {
  const changed = after.jobs.filter((row, i) => JSON.stringify(row) !== JSON.stringify(before.jobs[i]));
  if (after.jobs.length !== before.jobs.length || changed.length !== 1 || JSON.stringify(after.floor) !== JSON.stringify(before.floor)) return undefined;
  return { row: changed[0]! };
}

describe("HTTP fuzz", () => {
  test("random and malformed requests never answer a 5xx, and a refused one never changes the database", async () => {
    const { app, clock, store, url } = await freshApp({ limits: { maxBodyBytes: MAX_BODY } });
    const reader = createClient({ url });
    onTestFinished(() => reader.close());
    const snapshot = async () => {
      const read = async (sql: string) => (await reader.execute(sql)).rows.map((row) => ({ ...row }));
      return {
        jobs: await read("SELECT * FROM jobs ORDER BY id"),
        floor: await read("SELECT * FROM fence_floor"),
        events: await read("SELECT count(*) AS n, max(seq) AS last FROM events WHERE kind <> 'refused'"), // events are only ever appended
      };
    };
    // One job of each kind a request can meet: open, held by A, done, and held but expired.
    for (const id of ["open", "held", "done", "expired"]) await store.enqueue(id, { now: T });
    await store.claim("held", { owner: "A", ttlMs: 3_600_000, now: T });
    await store.claim("done", { owner: "A", ttlMs: 60_000, now: T });
    await store.complete("done", { owner: "A", fence: 1, result: '"ok"', now: T });
    await store.claim("expired", { owner: "B", ttlMs: 1_000, now: T - 10_000 });

    await fc.assert(
      fc.asyncProperty(request, async ({ sent: { method, path, headers, body }, tick }) => {
        clock.now += tick;
        const hasBody = body !== undefined && !["GET", "HEAD"].includes(method.toUpperCase());
        let built: Request;
        try {
          built = new Request(`http://localhost${path}`, { method, headers, body: hasBody ? body : undefined });
        } catch {
          fc.pre(false); // not a request that fetch can even build (a forbidden method or header value)
          return;
        }
        const before = await snapshot();
        const response = await app.request(built);
        const text = await response.text();
        const after = await snapshot();

        expect(response.status, `${method} ${path} answered ${response.status}: ${text}`).toBeLessThan(500);
        const ok = response.status >= 200 && response.status < 300;
        if (!ok && method.toUpperCase() !== "HEAD") {
          expect(JSON.parse(text), `${method} ${path} ${response.status}`).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
        }
        // One refusal changes a job, as the cron would have: a claim by id that meets a lease
        // that expired on the job's last attempt ends that lease (the job dies), then refuses.
        const died = response.status === 409 && JSON.parse(text).error?.details?.reason === "dead" ? deadIn(before, after) : undefined;
        if (died) {
          expect(died.row, `${method} ${path}: only an expired lease on its last attempt dies`).toMatchObject({ dead: 1, owner: null, last_event: "dead" });
          expect(after.events[0]!.n, "one event: the death").toBe((before.events[0]!.n as number) + 1);
          return;
        }
        if (!ok || ["GET", "HEAD"].includes(method.toUpperCase())) expect(after, `${method} ${path} ${response.status}: ${text}`).toEqual(before);
      }),
      { numRuns: 800 },
    );
  });
});
