import { describe, expect, test } from "vitest";
import { freshApp, T } from "../fresh-app.ts";
import { NO_KEY_LIMITS } from "../contract/queues.contract.ts";
import { documentSchemas, servedDocument } from "./document-schemas.ts";

// Keys over HTTP (docs/queues.md#keys): a job's key on the enqueue routes and
// in the Job, a schedule's key on its fired jobs, the per-key settings of PUT
// and GET /v1/queues/:queue, and a claim by id refused by its key. Each test
// builds its own app on a fresh database; the claims' rules themselves are the
// store's contract.

const TTL = 30_000;

/** The settings of a queue that limits its keys in every way. */
const KEYED = { maxLeasedPerKey: 2, keyRatePerSecond: 2.5, keyBurst: 5, orderedByKey: true, fairByKey: true };

describe("a job's key on the enqueue routes", () => {
  test("POST /v1/jobs with a key is 201 with the key in the job, stored; a job without one has key null", async () => {
    const { call, snapshot } = await freshApp();
    const keyed = await call("POST", "/v1/jobs", { id: "job-1", queue: "mail", key: "tenant-é" });
    expect(keyed).toMatchObject({ status: 201, body: { created: true, job: { id: "job-1", queue: "mail", key: "tenant-é", status: "queued" } } });
    expect((await call("POST", "/v1/jobs", { id: "job-2", queue: "mail" })).body.job.key).toBeNull();
    expect((await call("GET", "/v1/jobs/job-1")).body.key).toBe("tenant-é");
    expect((await call("POST", "/v1/jobs", { id: "job-3", key: "." })).body.job.key).toBe("."); // a key is never in a path: "." is one like any other
    const rows = await snapshot();
    expect([rows["job-1"]!.key, rows["job-2"]!.key, rows["job-3"]!.key]).toEqual(["tenant-é", null, "."]);
  });

  test("POST /v1/queues/:queue/jobs carries each job's key", async () => {
    const { call } = await freshApp();
    const answer = await call("POST", "/v1/queues/mail/jobs", { jobs: [{ id: "a-1", key: "a" }, { id: "none" }, { id: "b-1", key: "b" }] });
    expect(answer).toMatchObject({ status: 200, body: { jobs: [{ id: "a-1", created: true }, { id: "none", created: true }, { id: "b-1", created: true }] } });
    const { body } = await call("GET", "/v1/jobs?queue=mail");
    expect(body.jobs.map((job: { id: string; key: string | null }) => [job.id, job.key])).toEqual([["a-1", "a"], ["b-1", "b"], ["none", null]]);
  });

  test("the OpenAPI document writes the key's rules as maxLength and a pattern that refuses what the server refuses, but for bytes", async () => {
    const { call } = await freshApp();
    const { body } = await call("GET", "/openapi.json");
    const rule = body.paths["/v1/jobs"].post.requestBody.content["application/json"].schema;
    const key = (rule.$ref ? body.components.schemas[rule.$ref.split("/").at(-1)] : rule).properties.key;
    expect(key).toMatchObject({ type: "string", minLength: 1, maxLength: 255 });
    expect(key.description).toContain("255 bytes of UTF-8");
    const pattern = new RegExp(key.pattern, "u");
    for (const [i, sample] of ["tenant-42", "é ü 中文 🎉", ".", "..", "a@b", "a\nb", "a\tb", "a\u0085b", "a\u202eb", "a\u2028b"].entries()) {
      const accepted = (await call("POST", "/v1/jobs", { id: `job-${i}`, key: sample })).status === 201;
      expect(pattern.test(sample), JSON.stringify(sample)).toBe(accepted);
    }
  });

  const badKeys: [string, unknown, RegExp][] = [
    ["an empty key", "", /^key must not be empty$/],
    ["a key of 256 bytes", "é".repeat(128), /^key must be at most 255 bytes of UTF-8$/],
    ["a key that is not a string", 42, /^key must be a string$/],
    ["a key with a control character", "a\nb", /^key must not contain control characters/],
    ["a key with a lone surrogate", "a\ud800", /^key must be well-formed text/],
  ];
  for (const [what, key, says] of badKeys) {
    test(`${what} is 400 invalid_request naming the field, and nothing is stored, one job or many`, async () => {
      const { call, snapshot } = await freshApp();
      await call("POST", "/v1/jobs", { id: "bystander", key: "k" });
      const before = await snapshot();
      const one = await call("POST", "/v1/jobs", { id: "job-1", key });
      expect(one).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
      expect(one.body.error.message).toMatch(says);
      const many = await call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "job-2", key: "fine" }, { id: "job-3", key }] });
      expect(many).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
      expect(many.body.error.message).toMatch(new RegExp(`^jobs\\.1\\.${says.source.slice(1)}`));
      expect(await snapshot()).toEqual(before);
    });
  }
});

describe("PUT and GET /v1/queues/:queue, the per-key settings", () => {
  test("PUT sets the five with the queue's own, GET and the list read them back, and {} takes them away", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/jobs", { id: "other-1", queue: "other" });
    const limited = { queue: "q", paused: false, maxLeased: 10, ratePerSecond: null, burst: null, ...KEYED };
    expect(await call("PUT", "/v1/queues/q", { maxLeased: 10, ...KEYED })).toMatchObject({ status: 200, body: limited });
    expect((await call("GET", "/v1/queues/q")).body).toEqual(limited);
    expect((await call("GET", "/v1/queues")).body.queues).toEqual([{ queue: "other", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS }, limited]);
    expect((await call("POST", "/v1/queues/q/pause")).body).toEqual({ ...limited, paused: true }); // a pause keeps them
    expect((await call("PUT", "/v1/queues/q", { keyRatePerSecond: 2.5 })).body).toEqual({ queue: "q", paused: true, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS, keyRatePerSecond: 2.5, keyBurst: 3 }); // the default burst
    expect((await call("PUT", "/v1/queues/q", {})).body).toEqual({ queue: "q", paused: true, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
  });

  const badSettings: [Record<string, unknown>, RegExp][] = [
    [{ maxLeasedPerKey: 0 }, /^maxLeasedPerKey must be at least 1$/],
    [{ maxLeasedPerKey: 1001 }, /^maxLeasedPerKey must be at most 1000$/],
    [{ maxLeasedPerKey: 1.5 }, /^maxLeasedPerKey must be a whole number$/],
    [{ maxLeasedPerKey: "2" }, /^maxLeasedPerKey must be a number$/],
    [{ keyRatePerSecond: 0 }, /^keyRatePerSecond must be above 0$/],
    [{ keyRatePerSecond: 0.0001 }, /^keyRatePerSecond must be a multiple of 0\.001/],
    [{ keyRatePerSecond: 1, keyBurst: 0 }, /^keyBurst must be at least 1$/],
    [{ keyBurst: 3 }, /^keyBurst needs keyRatePerSecond/],
    [{ orderedByKey: "yes" }, /^orderedByKey must be true or false$/],
    [{ fairByKey: 1 }, /^fairByKey must be true or false$/],
    [{ keyLimit: 2 }, /^unknown field "keyLimit"/],
  ];
  test("bad per-key settings are 400 invalid_request naming the field, and change nothing", async () => {
    const { call } = await freshApp();
    await call("PUT", "/v1/queues/q", KEYED);
    for (const [bad, says] of badSettings) {
      const refused = await call("PUT", "/v1/queues/q", bad);
      expect(refused, JSON.stringify(bad)).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
      expect(refused.body.error.message, JSON.stringify(bad)).toMatch(says);
    }
    expect((await call("GET", "/v1/queues/q")).body).toEqual({ queue: "q", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...KEYED });
  });

  test("a keyBurst that is a number needs a keyRatePerSecond that is one, by the server and by the document alike", async () => {
    const { call } = await freshApp();
    const valid = documentSchemas(await servedDocument()).body("/v1/queues/{queue}", "put");
    const bodies = [{ keyBurst: null }, { keyRatePerSecond: 2 }, { keyRatePerSecond: 2, keyBurst: 5 }, { keyBurst: 5 }, { keyBurst: 5, keyRatePerSecond: null }, { keyBurst: 5, ratePerSecond: 2 }];
    const judged = [];
    for (const body of bodies) judged.push({ body, byDocument: valid(body).valid, byServer: (await call("PUT", "/v1/queues/q", body)).status === 200 });
    expect(judged.filter(({ byDocument, byServer }) => byDocument !== byServer)).toEqual([]);
    expect(judged.filter(({ byServer }) => !byServer).map(({ body }) => body)).toEqual([{ keyBurst: 5 }, { keyBurst: 5, keyRatePerSecond: null }, { keyBurst: 5, ratePerSecond: 2 }]);
  });
});

describe("POST /v1/jobs/:id/claim refused by the job's key", () => {
  test("a key with its maxLeasedPerKey current leases: 409 not_claimable key_full, nothing changed; another key is claimed", async () => {
    const { call, snapshot } = await freshApp();
    await call("PUT", "/v1/queues/q", { maxLeasedPerKey: 2 });
    await call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "a-1", key: "a" }, { id: "a-2", key: "a" }, { id: "a-3", key: "a" }, { id: "b-1", key: "b" }] });
    for (const id of ["a-1", "a-2"]) expect((await call("POST", `/v1/jobs/${id}/claim`, { owner: "A", ttlMs: TTL })).status).toBe(200);
    const before = await snapshot();
    const refused = await call("POST", "/v1/jobs/a-3/claim", { owner: "A", ttlMs: TTL });
    expect(refused).toMatchObject({ status: 409, body: { error: { code: "not_claimable", details: { reason: "key_full" } } } });
    expect(refused.body.error.details).toEqual({ reason: "key_full" });
    expect(refused.body.error.message).toContain("maxLeasedPerKey");
    expect(await snapshot()).toEqual(before);
    expect((await call("POST", "/v1/jobs/b-1/claim", { owner: "A", ttlMs: TTL })).status).toBe(200); // the bystander key
  });

  test("a key whose bucket is empty: 409 not_claimable key_rate_limited until its next token", async () => {
    const { call, clock } = await freshApp();
    await call("PUT", "/v1/queues/q", { keyRatePerSecond: 1, keyBurst: 1 });
    await call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "a-1", key: "a" }, { id: "a-2", key: "a" }, { id: "b-1", key: "b" }] });
    expect((await call("POST", "/v1/jobs/a-1/claim", { owner: "A", ttlMs: TTL })).status).toBe(200);
    expect((await call("POST", "/v1/jobs/a-2/claim", { owner: "A", ttlMs: TTL })).body.error).toMatchObject({ code: "not_claimable", details: { reason: "key_rate_limited" } });
    expect((await call("POST", "/v1/jobs/b-1/claim", { owner: "A", ttlMs: TTL })).status).toBe(200);
    clock.now = T + 1_000;
    expect((await call("POST", "/v1/jobs/a-2/claim", { owner: "A", ttlMs: TTL })).status).toBe(200);
  });

  test("a queue ordered by key: a later job is 409 not_claimable key_ordered with details.behind, until the earlier one is done", async () => {
    const { call, snapshot } = await freshApp();
    await call("PUT", "/v1/queues/q", { orderedByKey: true });
    await call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "a-1", key: "a" }, { id: "a-2", key: "a" }] });
    const before = await snapshot();
    const early = await call("POST", "/v1/jobs/a-2/claim", { owner: "A", ttlMs: TTL });
    expect(early).toMatchObject({ status: 409, body: { error: { code: "not_claimable", details: { reason: "key_ordered", behind: "a-1" } } } });
    expect(early.body.error.message).toContain('(job "a-1" first)');
    expect(await snapshot()).toEqual(before);
    const { body: lease } = await call("POST", "/v1/jobs/a-1/claim", { owner: "A", ttlMs: TTL });
    expect((await call("POST", "/v1/jobs/a-2/claim", { owner: "B", ttlMs: TTL })).body.error.details).toEqual({ reason: "key_ordered", behind: "a-1" });
    await call("POST", "/v1/jobs/a-1/complete", { owner: "A", fence: lease.fence, result: 1 });
    expect(await call("POST", "/v1/jobs/a-2/claim", { owner: "B", ttlMs: TTL })).toMatchObject({ status: 200, body: { job: { id: "a-2", key: "a" } } });
  });

  test("the OpenAPI document lists every reason, the key ones included, and behind", async () => {
    const { call } = await freshApp();
    const { body } = await call("GET", "/openapi.json");
    const refusal = body.paths["/v1/jobs/{id}/claim"].post.responses["409"];
    expect(refusal.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/NotClaimable" });
    const details = body.components.schemas.NotClaimable.properties.error.properties.details;
    expect(details.properties.reason.enum).toEqual(["leased", "done", "dead", "cancelled", "paused", "rate_limited", "full", "key_full", "key_rate_limited", "key_ordered"]);
    expect(details.required).toEqual(["reason"]);
    expect(details.properties.behind).toMatchObject({ type: "string" });
    expect(refusal.description).toContain("key_ordered");
  });
});

describe("a schedule's key", () => {
  test("PUT /v1/schedules/:name takes a key and answers it; its fires enqueue jobs with that key, held back as an enqueue would be", async () => {
    const { call, store, snapshot } = await freshApp();
    await call("PUT", "/v1/queues/q", { maxLeasedPerKey: 1 });
    const put = await call("PUT", "/v1/schedules/tick", { queue: "q", everyMs: 60_000, key: "tenant-1" });
    expect(put).toMatchObject({ status: 201, body: { name: "tick", key: "tenant-1" } });
    await call("PUT", "/v1/schedules/tock", { queue: "q", everyMs: 60_000, key: "tenant-1" });
    await call("PUT", "/v1/schedules/plain", { queue: "q", everyMs: 60_000 });
    expect((await call("GET", "/v1/schedules/tick")).body.key).toBe("tenant-1");
    expect((await call("GET", "/v1/schedules")).body.schedules.map((schedule: { name: string; key: string | null }) => [schedule.name, schedule.key])).toEqual([["plain", null], ["tick", "tenant-1"], ["tock", "tenant-1"]]);

    const at = new Date(T + 60_000).toISOString();
    expect((await store.schedules.fireDue({ now: T + 60_000 })).jobs).toHaveLength(3);
    const rows = await snapshot();
    // Two fires of one key in one batch: the first let in, the second held back behind it (maxLeasedPerKey 1).
    expect([`plain@${at}`, `tick@${at}`, `tock@${at}`].map((id) => [rows[id]!.key, rows[id]!.held_back])).toEqual([[null, 0], ["tenant-1", 0], ["tenant-1", 1]]);
    expect((await call("GET", `/v1/jobs/${encodeURIComponent(`tick@${at}`)}`)).body).toMatchObject({ key: "tenant-1", queue: "q", runAt: T + 60_000 });
  });

  test("a bad key is 400 invalid_request naming the field, and no schedule is stored", async () => {
    const { call } = await freshApp();
    const refused = await call("PUT", "/v1/schedules/tick", { queue: "q", everyMs: 60_000, key: "" });
    expect(refused).toMatchObject({ status: 400, body: { error: { code: "invalid_request", message: "key must not be empty" } } });
    expect((await call("GET", "/v1/schedules")).body).toEqual({ schedules: [] });
  });
});
