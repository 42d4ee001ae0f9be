import { expect, test, vi } from "vitest";
import { freshApp, TOKEN } from "../fresh-app.ts";

const TTL = 30_000;
const LONG = "é".repeat(128); // 128 characters, 256 bytes of UTF-8: one byte too many

type Bad = { why: string; method: string; path: string; body?: unknown; headers?: Record<string, string>; status: number; code: string; says?: RegExp };

// Every one of these must be refused with its status and code, a message for
// a person, and no change at all to the database.
const BAD: Bad[] = [
  { why: "a body sent without Content-Type: application/json", method: "POST", path: "/v1/jobs", body: '{"id":"x"}', headers: { "Content-Type": "text/plain" }, status: 400, code: "invalid_request", says: /Content-Type: application\/json/ },
  { why: "malformed JSON", method: "POST", path: "/v1/jobs", body: '{"id": "x",', status: 400, code: "invalid_request", says: /not valid JSON/ },
  { why: "an empty body", method: "POST", path: "/v1/jobs", body: "", status: 400, code: "invalid_request" },
  { why: "a JSON array for a body", method: "POST", path: "/v1/jobs", body: [{ id: "x" }], status: 400, code: "invalid_request", says: /JSON object/ },
  { why: "a JSON null for a body", method: "POST", path: "/v1/jobs", body: "null", status: 400, code: "invalid_request", says: /JSON object/ },
  { why: "a job without an id", method: "POST", path: "/v1/jobs", body: { queue: "q" }, status: 400, code: "invalid_request", says: /id is required/ },
  { why: "an empty id", method: "POST", path: "/v1/jobs", body: { id: "" }, status: 400, code: "invalid_request", says: /id must not be empty/ },
  { why: "an id over 255 bytes", method: "POST", path: "/v1/jobs", body: { id: LONG }, status: 400, code: "invalid_request", says: /255 bytes/ },
  { why: "an id that is a number", method: "POST", path: "/v1/jobs", body: { id: 42 }, status: 400, code: "invalid_request", says: /id must be a string/ },
  { why: "an id with a NUL in it, which SQLite would cut off", method: "POST", path: "/v1/jobs", body: { id: "a\u0000b" }, status: 400, code: "invalid_request", says: /without NUL/ },
  { why: "an id with a newline, which would forge a log line", method: "POST", path: "/v1/jobs", body: { id: "a\nGET /v1/admin 200 1ms" }, status: 400, code: "invalid_request", says: /id must not contain control characters/ },
  { why: "a queue with a terminal escape sequence", method: "POST", path: "/v1/jobs", body: { id: "x", queue: "q\u001b[2J" }, status: 400, code: "invalid_request", says: /queue must not contain control characters/ },
  { why: "an owner with a bidirectional override", method: "POST", path: "/v1/queues/q/claim", body: { owner: "A\u202eB", ttlMs: 1000 }, status: 400, code: "invalid_request", says: /owner must not contain control characters/ },
  { why: "an id with a lone surrogate", method: "POST", path: "/v1/jobs", body: '{"id":"\\ud800"}', status: 400, code: "invalid_request", says: /well-formed/ },
  { why: 'the id "..", which no URL can carry', method: "POST", path: "/v1/jobs", body: { id: ".." }, status: 400, code: "invalid_request", says: /must not be "\." or "\.\."/ },
  { why: "an unknown field", method: "POST", path: "/v1/jobs", body: { id: "x", colour: "red" }, status: 400, code: "invalid_request", says: /unknown field "colour"/ },
  { why: "a fractional priority", method: "POST", path: "/v1/jobs", body: { id: "x", priority: 1.5 }, status: 400, code: "invalid_request", says: /priority must be a whole number/ },
  { why: "a priority sent as a string", method: "POST", path: "/v1/jobs", body: { id: "x", priority: "1" }, status: 400, code: "invalid_request", says: /priority must be a number/ },
  { why: "a negative runAt", method: "POST", path: "/v1/jobs", body: { id: "x", runAt: -1 }, status: 400, code: "invalid_request", says: /runAt/ },
  { why: "both runAt and delayMs", method: "POST", path: "/v1/jobs", body: { id: "x", runAt: 1, delayMs: 1 }, status: 400, code: "invalid_request", says: /not both/ },
  { why: "a negative delayMs", method: "POST", path: "/v1/jobs", body: { id: "x", delayMs: -5 }, status: 400, code: "invalid_request", says: /delayMs/ },
  { why: "a zero maxAttempts", method: "POST", path: "/v1/jobs", body: { id: "x", maxAttempts: 0 }, status: 400, code: "invalid_request", says: /maxAttempts must be at least 1/ },
  { why: "an empty queue name", method: "POST", path: "/v1/jobs", body: { id: "x", queue: "" }, status: 400, code: "invalid_request", says: /queue/ },
  { why: "a body over the size limit", method: "POST", path: "/v1/jobs", body: { id: "x", payload: "p".repeat(2048) }, status: 413, code: "payload_too_large", says: /1024 bytes/ },
  { why: "ttlMs 0", method: "POST", path: "/v1/jobs/job-1/claim", body: { owner: "B", ttlMs: 0 }, status: 400, code: "invalid_request", says: /ttlMs must be at least 1/ },
  { why: "a negative ttlMs", method: "POST", path: "/v1/jobs/job-1/claim", body: { owner: "B", ttlMs: -1 }, status: 400, code: "invalid_request", says: /ttlMs/ },
  { why: "a fractional ttlMs", method: "POST", path: "/v1/jobs/job-1/claim", body: { owner: "B", ttlMs: 1.5 }, status: 400, code: "invalid_request", says: /ttlMs must be a whole number/ },
  { why: "a ttlMs sent as a string", method: "POST", path: "/v1/jobs/job-1/claim", body: { owner: "B", ttlMs: "1000" }, status: 400, code: "invalid_request", says: /ttlMs must be a number/ },
  { why: "a ttlMs above the maximum", method: "POST", path: "/v1/jobs/job-1/claim", body: { owner: "B", ttlMs: 3_600_001 }, status: 400, code: "invalid_request", says: /ttlMs must be at most 3600000/ },
  { why: "a claim without an owner", method: "POST", path: "/v1/jobs/job-1/claim", body: { ttlMs: TTL }, status: 400, code: "invalid_request", says: /owner is required/ },
  { why: "an empty owner", method: "POST", path: "/v1/jobs/job-1/claim", body: { owner: "", ttlMs: TTL }, status: 400, code: "invalid_request", says: /owner must not be empty/ },
  { why: "an owner over 255 bytes", method: "POST", path: "/v1/jobs/job-1/claim", body: { owner: LONG, ttlMs: TTL }, status: 400, code: "invalid_request", says: /owner must be at most 255 bytes/ },
  { why: "a clock sent by the client: time is the server's", method: "POST", path: "/v1/jobs/job-1/claim", body: { owner: "B", ttlMs: TTL, now: 0 }, status: 400, code: "invalid_request", says: /unknown field "now"/ },
  { why: "a claim-next limit of 0", method: "POST", path: "/v1/queues/default/claim", body: { owner: "B", ttlMs: TTL, limit: 0 }, status: 400, code: "invalid_request", says: /limit must be at least 1/ },
  { why: "a claim-next limit over 100", method: "POST", path: "/v1/queues/default/claim", body: { owner: "B", ttlMs: TTL, limit: 101 }, status: 400, code: "invalid_request", says: /limit must be at most 100/ },
  { why: "a queue name over 255 bytes", method: "POST", path: `/v1/queues/${encodeURIComponent(LONG)}/claim`, body: { owner: "B", ttlMs: TTL }, status: 400, code: "invalid_request", says: /queue/ },
  { why: "a renew with fence 0", method: "POST", path: "/v1/jobs/job-1/renew", body: { owner: "A", fence: 0, ttlMs: TTL }, status: 400, code: "invalid_request", says: /fence must be at least 1/ },
  { why: "a renew with the fence as a string", method: "POST", path: "/v1/jobs/job-1/renew", body: { owner: "A", fence: "1", ttlMs: TTL }, status: 400, code: "invalid_request", says: /fence must be a number/ },
  { why: "a renew without a fence", method: "POST", path: "/v1/jobs/job-1/renew", body: { owner: "A", ttlMs: TTL }, status: 400, code: "invalid_request", says: /fence is required/ },
  { why: "a renew with a ttl above the maximum", method: "POST", path: "/v1/jobs/job-1/renew", body: { owner: "A", fence: 1, ttlMs: 10 ** 12 }, status: 400, code: "invalid_request", says: /ttlMs/ },
  { why: "a complete without a result", method: "POST", path: "/v1/jobs/job-1/complete", body: { owner: "A", fence: 1 }, status: 400, code: "invalid_request", says: /result is required/ },
  { why: "a complete with a fractional fence", method: "POST", path: "/v1/jobs/job-1/complete", body: { owner: "A", fence: 1.5, result: 1 }, status: 400, code: "invalid_request", says: /fence/ },
  { why: "a fence beyond the safe integers", method: "POST", path: "/v1/jobs/job-1/complete", body: '{"owner":"A","fence":9007199254740993,"result":1}', status: 400, code: "invalid_request", says: /fence/ },
  { why: "a release with a numeric owner", method: "POST", path: "/v1/jobs/job-1/release", body: { owner: 42, fence: 1 }, status: 400, code: "invalid_request", says: /owner must be a string/ },
  { why: "a job id over 255 bytes in the path", method: "GET", path: `/v1/jobs/${encodeURIComponent(LONG)}`, status: 400, code: "invalid_request", says: /id must be at most 255 bytes/ },
  { why: "a method the path does not take", method: "PUT", path: "/v1/jobs/job-1", status: 405, code: "method_not_allowed", says: /use GET or DELETE/ },
  { why: "a claim with no body at all", method: "POST", path: "/v1/jobs/job-1/claim", status: 400, code: "invalid_request", says: /^the body is required: send it as JSON/ },
  { why: "a queue's limits put with no body at all, which the validator read as {} and cleared every limit", method: "PUT", path: "/v1/queues/default", status: 400, code: "invalid_request", says: /^the body is required: send it as JSON/ },
  { why: "GET on a POST-only route", method: "GET", path: "/v1/jobs/job-1/claim", status: 405, code: "method_not_allowed", says: /use POST/ },
  { why: "a payload integer beyond 2^53, which JSON.parse would round", method: "POST", path: "/v1/jobs", body: '{"id":"x","payload":{"ids":[1,12345678901234567891]}}', status: 400, code: "invalid_request", says: /^payload\.ids\.1 is a number that cannot be kept exactly .+ send it as a string$/ },
  { why: "a result of 1e400, which would become Infinity and be stored as null", method: "POST", path: "/v1/jobs/job-1/complete", body: '{"owner":"A","fence":1,"result":1e400}', status: 400, code: "invalid_request", says: /^result is a number that cannot be kept exactly/ },
  { why: "a bulk job's payload beyond 2^53", method: "POST", path: "/v1/queues/q/jobs", body: '{"jobs":[{"id":"a"},{"id":"b","payload":-9007199254740993}]}', status: 400, code: "invalid_request", says: /^jobs\.1\.payload is a number that cannot be kept exactly/ },
  { why: "a many-lease result of -1e999", method: "POST", path: "/v1/leases/complete", body: '{"owner":"A","leases":[{"id":"job-1","fence":1,"result":{"n":-1e999}}]}', status: 400, code: "invalid_request", says: /^leases\.0\.result\.n is a number that cannot be kept exactly/ },
  { why: "a route that does not exist", method: "GET", path: "/v2/jobs", status: 404, code: "route_not_found", says: /no route GET \/v2\/jobs/ },
  { why: "a wrong token", method: "POST", path: "/v1/jobs", body: { id: "x" }, headers: { Authorization: "Bearer not-the-token" }, status: 401, code: "unauthorized", says: /not valid/ },
  { why: "no token at all", method: "GET", path: "/v1/jobs/job-1", headers: { Authorization: "" }, status: 401, code: "unauthorized" },
];

test.each(BAD)("$why: $status $code, and the database is unchanged", async ({ method, path, body, headers, status, code, says }) => {
  const { call, snapshot } = await freshApp({ limits: { maxBodyBytes: 1024 } });
  await call("POST", "/v1/jobs", { id: "job-1" });
  await call("POST", "/v1/jobs/job-1/claim", { owner: "A", ttlMs: TTL });
  const before = await snapshot();

  const answer = await call(method, path, body, headers);

  expect(answer.status).toBe(status);
  expect(answer.body.error.code).toBe(code);
  expect(answer.body.error.message).toEqual(expect.any(String));
  if (says) expect(answer.body.error.message).toMatch(says);
  expect(await snapshot()).toEqual(before);
});

test("numbers JSON keeps pass untouched: ±(2^53 - 1), 2^60 written out, and floats such as 6.02e23, 1e308 and 0.1", async () => {
  const { call } = await freshApp();
  const answer = await call("POST", "/v1/jobs", '{"id":"x","payload":[9007199254740991,-9007199254740991,1152921504606846976,6.02e23,1e308,0.1]}');
  expect(answer.status).toBe(201);
  expect(answer.body.job.payload).toEqual([9007199254740991, -9007199254740991, 2 ** 60, 6.02e23, 1e308, 0.1]);
});

test("a body sent in chunks, without a length, is counted as it comes: over the limit 413 and nothing written, under it accepted", async () => {
  const { app, snapshot } = await freshApp({ limits: { maxBodyBytes: 1024 } });
  const chunked = (text: string) =>
    app.request("/v1/jobs", {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      body: new ReadableStream({ start(controller) {
        for (let at = 0; at < text.length; at += 100) controller.enqueue(new TextEncoder().encode(text.slice(at, at + 100)));
        controller.close();
      } }),
      duplex: "half",
    } as RequestInit);
  const big = await chunked(JSON.stringify({ id: "big", payload: "p".repeat(2048) }));
  expect(big.status).toBe(413);
  expect(((await big.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
  expect(await snapshot()).toEqual({});
  expect((await chunked(JSON.stringify({ id: "small" }))).status).toBe(201);
});

test("a token is never echoed back in an error", async () => {
  const { call } = await freshApp();
  const answer = await call("GET", "/v1/jobs/job-1", undefined, { Authorization: "Bearer secret-guess-123" });
  expect(JSON.stringify(answer.body)).not.toContain("secret-guess-123");
  expect(JSON.stringify(answer.body)).not.toContain(TOKEN);
});

/** JSON text of arrays nested `depth` levels around `inner`. */
const nested = (depth: number, inner = "") => `${"[".repeat(depth)}${inner}${"]".repeat(depth)}`;

/** Each JSON value a route takes, in a body that holds `value` there; the field as the refusal names it. */
const VALUE_FIELDS = [
  { field: "progress", path: "/v1/jobs/job-1/renew", body: (value: string) => `{"owner":"A","fence":1,"ttlMs":${TTL},"progress":${value}}` },
  { field: "leases[0].progress", path: "/v1/leases/renew", body: (value: string) => `{"owner":"A","ttlMs":${TTL},"leases":[{"id":"job-1","fence":1,"progress":${value}}]}` },
  { field: "result", path: "/v1/jobs/job-1/complete", body: (value: string) => `{"owner":"A","fence":1,"result":${value}}` },
  { field: "leases[0].result", path: "/v1/leases/complete", body: (value: string) => `{"owner":"A","leases":[{"id":"job-1","fence":1,"result":${value}}]}` },
  { field: "payload", path: "/v1/jobs", body: (value: string) => `{"id":"job-2","payload":${value}}` },
  { field: "jobs[0].payload", path: "/v1/queues/q/jobs", body: (value: string) => `{"jobs":[{"id":"job-2","payload":${value}}]}` },
  { field: "payload", path: "/v1/schedules/nightly", method: "PUT", body: (value: string) => `{"queue":"q","everyMs":60000,"payload":${value}}` },
];

/** Sends `body` to a job-1 leased by A, and answers what came back, whether anything was logged, and whether the database changed. */
async function sentToLeasedJob(method: string, path: string, body: string) {
  const { call, snapshot } = await freshApp();
  await call("POST", "/v1/jobs", { id: "job-1", queue: "q" });
  await call("POST", "/v1/jobs/job-1/claim", { owner: "A", ttlMs: TTL });
  const before = await snapshot();
  const logged = vi.spyOn(console, "error");
  try {
    const answer = await call(method, path, body);
    return { answer, logged: logged.mock.calls.length > 0, unchanged: JSON.stringify(await snapshot()) === JSON.stringify(before) };
  } finally {
    logged.mockRestore();
  }
}

test.each(VALUE_FIELDS)("a $field nested 65 levels ($path) is 400 naming the field and the limit of 64, and nothing changes", async ({ field, path, method = "POST", body }) => {
  const { answer, logged, unchanged } = await sentToLeasedJob(method, path, body(nested(65)));
  expect(answer.status).toBe(400);
  expect(answer.body.error).toEqual({ code: "invalid_request", message: `${field} must nest at most 64 levels of arrays and objects; flatten it, or send its deep part as a string` });
  expect(logged).toBe(false);
  expect(unchanged).toBe(true);
});

test.each(VALUE_FIELDS)("a $field nested 64 levels ($path) is taken", async ({ path, method = "POST", body }) => {
  const { answer } = await sentToLeasedJob(method, path, body(nested(64)));
  expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
});

test.each([69, 3_000, 4_400, 100_000, 500_000])("a body nested %i levels is refused as it is read, always with the same answer, before any route parses it", async (depth) => {
  for (const { path, method = "POST", body } of VALUE_FIELDS) {
    const { answer, logged, unchanged } = await sentToLeasedJob(method, path, body(nested(depth)));
    expect(answer.status, path).toBe(400);
    expect(answer.body.error, path).toEqual({
      code: "invalid_request",
      message: "the body must nest at most 68 levels of arrays and objects (a payload, result or progress at most 64); flatten it, or send its deep part as a string",
    });
    expect(logged).toBe(false);
    expect(unchanged).toBe(true);
  }
});

test("a body sent as application/...+json, which the routes parse as JSON, is held to the same depth and numbers", async () => {
  const { call, snapshot } = await freshApp();
  const deep = await call("POST", "/v1/jobs", `{"id":"x","payload":${nested(100_000)}}`, { "Content-Type": "application/merge-patch+json" });
  expect(deep.body.error?.message).toMatch(/^the body must nest at most 68 levels/);
  const rounded = await call("POST", "/v1/jobs", '{"id":"x","payload":12345678901234567891}', { "Content-Type": "application/vnd.api+json; charset=utf-8" });
  expect(rounded.body.error?.message).toMatch(/^payload is a number that cannot be kept exactly/);
  expect(await snapshot()).toEqual({});
});

test("an integer beyond 2^53 nested 60 deep is refused like a shallow one, naming where it is, not stored rounded", async () => {
  const { call, snapshot } = await freshApp();
  const answer = await call("POST", "/v1/jobs", `{"id":"x","payload":${nested(60, "12345678901234567891")}}`);
  expect(answer.status).toBe(400);
  expect(answer.body.error).toMatchObject({ code: "invalid_request", message: expect.stringMatching(new RegExp(`^payload${".0".repeat(60)} is a number that cannot be kept exactly`)) });
  expect(await snapshot()).toEqual({});
});

test("a body that says it is far over the limit is refused at once, without waiting for it", async () => {
  const { app } = await freshApp({ limits: { maxBodyBytes: 1024 } });
  const endless = new ReadableStream({ pull: (controller) => new Promise((resolve) => setTimeout(() => resolve(controller.enqueue(new Uint8Array(100))), 50)) });
  const answer = await app.request("/v1/jobs", {
    method: "POST",
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json", "Content-Length": String(1024 * 1024) },
    body: endless,
    duplex: "half",
  } as RequestInit);
  expect(answer.status).toBe(413);
  expect(answer.headers.get("Connection")).toBe("close");
});
