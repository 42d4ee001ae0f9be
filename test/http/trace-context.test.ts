import { describe, expect, test } from "vitest";
import { freshApp, T } from "../fresh-app.ts";

// The W3C trace context of an enqueue (issue 21 part 2): from the request's
// traceparent and tracestate headers, or from each job's own fields, stored
// with the job and handed back with every lease.

const PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const STATE = "congo=t61rcWkgMzE";
const OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
const CLAIM = { owner: "W", ttlMs: 30_000 };

describe("POST /v1/jobs", () => {
  test("stores the traceparent and tracestate headers with the job, and the claim hands them back", async () => {
    const { call, snapshot } = await freshApp();
    const answer = await call("POST", "/v1/jobs", { id: "traced", queue: "q" }, { traceparent: PARENT, tracestate: STATE });
    expect(answer.status).toBe(201);
    expect(answer.body.job).toMatchObject({ traceparent: PARENT, tracestate: STATE });
    expect((await snapshot()).traced).toMatchObject({ traceparent: PARENT, tracestate: STATE });
    const claimed = await call("POST", "/v1/queues/q/claim", CLAIM);
    expect(claimed.body.leases[0].job).toMatchObject({ id: "traced", traceparent: PARENT, tracestate: STATE });
    expect((await call("POST", "/v1/jobs/traced/claim", CLAIM)).status).toBe(409); // still leased: the same job
  });

  test("without the headers the job has null for both", async () => {
    const { call } = await freshApp();
    const answer = await call("POST", "/v1/jobs", { id: "plain" });
    expect(answer.body.job).toMatchObject({ traceparent: null, tracestate: null });
  });

  test.each([
    ["uppercase", PARENT.toUpperCase()],
    ["version ff", `ff${PARENT.slice(2)}`],
    ["a zero trace-id", `00-${"0".repeat(32)}-00f067aa0ba902b7-01`],
    ["garbage", "not a traceparent"],
  ])("a traceparent header that cannot be parsed (%s) is ignored, its tracestate with it, as the spec tells a receiver: the job is enqueued without", async (_, header) => {
    const { call, snapshot } = await freshApp();
    const answer = await call("POST", "/v1/jobs", { id: "job-1" }, { traceparent: header, tracestate: STATE });
    expect(answer.status).toBe(201);
    expect((await snapshot())["job-1"]).toMatchObject({ traceparent: null, tracestate: null });
  });

  test("a tracestate header that cannot be parsed is dropped and the traceparent kept", async () => {
    const { call, snapshot } = await freshApp();
    await call("POST", "/v1/jobs", { id: "job-1" }, { traceparent: PARENT, tracestate: "Not=Valid" });
    expect((await snapshot())["job-1"]).toMatchObject({ traceparent: PARENT, tracestate: null });
  });

  test("a later version in the header is stored as the version 00 it contains", async () => {
    const { call, snapshot } = await freshApp();
    await call("POST", "/v1/jobs", { id: "job-1" }, { traceparent: `01${PARENT.slice(2)}-more` });
    expect((await snapshot())["job-1"]).toMatchObject({ traceparent: PARENT });
  });

  test("the job's own fields win over the headers, both of them: no tracestate of the header joins the field's traceparent", async () => {
    const { call, snapshot } = await freshApp();
    await call("POST", "/v1/jobs", { id: "job-1", traceparent: OTHER }, { traceparent: PARENT, tracestate: STATE });
    expect((await snapshot())["job-1"]).toMatchObject({ traceparent: OTHER, tracestate: null });
  });

  test.each([
    [{ traceparent: "00-abc" }, /^traceparent must be version-traceid-parentid-flags/],
    [{ traceparent: PARENT, tracestate: "a=1,a=2" }, /^tracestate has the key "a" twice/],
    [{ tracestate: STATE }, /^tracestate needs a traceparent/],
    [{ traceparent: 7 }, /^traceparent must be a string/],
  ])("a field the caller wrote is refused when it breaks the spec: 400 naming it, nothing stored (%j)", async (fields, message) => {
    const { call, snapshot } = await freshApp();
    const answer = await call("POST", "/v1/jobs", { id: "job-1", ...fields });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe("invalid_request");
    expect(answer.body.error.message).toMatch(message);
    expect(await snapshot()).toEqual({});
  });
});

describe("POST /v1/queues/:queue/jobs", () => {
  test("each job's own fields are stored; a job without them takes the request's headers", async () => {
    const { call, snapshot, clock } = await freshApp();
    const answer = await call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "own", traceparent: OTHER, tracestate: "rojo=1" }, { id: "header" }] }, { traceparent: PARENT, tracestate: STATE });
    expect(answer.status).toBe(200);
    const rows = await snapshot();
    expect(rows.own).toMatchObject({ traceparent: OTHER, tracestate: "rojo=1", created_at: T });
    expect(rows.header).toMatchObject({ traceparent: PARENT, tracestate: STATE });
    clock.now += 1;
    const claimed = await call("POST", "/v1/queues/q/claim", { ...CLAIM, limit: 2 });
    expect(claimed.body.leases.map((lease: { job: { id: string; traceparent: string } }) => [lease.job.id, lease.job.traceparent]).sort()).toEqual([["header", PARENT], ["own", OTHER]]);
  });

  test("a job whose field breaks the spec refuses the whole call, naming the job: 400, nothing stored", async () => {
    const { call, snapshot } = await freshApp();
    const answer = await call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "fine" }, { id: "bad", tracestate: STATE }] });
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toMatch(/^jobs\.1\.tracestate needs a traceparent/);
    expect(await snapshot()).toEqual({});
  });
});
