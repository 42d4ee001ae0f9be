import { describe, expect, test } from "vitest";
import { freshApp, T } from "../fresh-app.ts";

// Search and the bulk actions through the HTTP API (docs/search.md): the
// filters in the query (a status repeated), the bulk route's answer, a bad
// filter's 400 naming its field, and a token limited to one queue. The rules
// themselves run on every backend in test/contract/search.contract.ts.

const TTL = 30_000;

/** The app with, in queue invoices, inv-1 and inv-2 dead ("card declined") and inv-3 leased by W; in queue mail, mail-1 dead and mail-2 queued. */
async function world() {
  const fresh = await freshApp();
  const { call, clock } = fresh;
  for (const [id, queue] of [["inv-1", "invoices"], ["inv-2", "invoices"], ["inv-3", "invoices"], ["mail-1", "mail"], ["mail-2", "mail"]]) {
    expect((await call("POST", "/v1/jobs", { id, queue, maxAttempts: 1 })).status).toBe(201);
  }
  for (const id of ["inv-1", "inv-2", "mail-1"]) {
    expect((await call("POST", `/v1/jobs/${id}/claim`, { owner: "W", ttlMs: TTL })).status).toBe(200);
    expect((await call("POST", `/v1/jobs/${id}/fail`, { owner: "W", fence: 1, error: "card declined" })).status).toBe(200);
  }
  expect((await call("POST", "/v1/jobs/inv-3/claim", { owner: "W", ttlMs: TTL })).status).toBe(200);
  clock.now = T + 10;
  return fresh;
}

/** The ids of a page's jobs. */
const ids = (body: { jobs: { id: string }[] }) => body.jobs.map((job) => job.id);

describe("GET /v1/jobs, a search", () => {
  test("takes every filter in the query, a status repeated, and answers the jobs that match them all", async () => {
    const { call } = await world();
    expect(ids((await call("GET", "/v1/jobs?status=dead&status=leased")).body)).toEqual(["inv-1", "inv-2", "inv-3", "mail-1"]);
    expect(ids((await call("GET", "/v1/jobs?status=dead&queue=invoices&error=declined")).body)).toEqual(["inv-1", "inv-2"]);
    expect(ids((await call("GET", `/v1/jobs?idPrefix=mail&createdFrom=${T}&createdTo=${T}`)).body)).toEqual(["mail-1", "mail-2"]);
    expect(ids((await call("GET", `/v1/jobs?finishedFrom=${T}&finishedTo=${T + 10}&limit=2`)).body)).toEqual(["inv-1", "inv-2"]);
    expect((await call("GET", "/v1/jobs?error=Declined")).body).toEqual({ jobs: [], nextCursor: null });
  });

  test("a bad filter is 400 invalid_request naming it, and a range that ends before it starts too", async () => {
    const { call } = await world();
    const refused: [string, RegExp][] = [
      ["status=running", /^status/],
      ["status=dead&status=nope", /^status/],
      ["createdFrom=-1", /^createdFrom must be milliseconds since the epoch/],
      ["finishedTo=99999999999999999", /^finishedTo must be/],
      [`createdFrom=${T + 1}&createdTo=${T}`, /^createdFrom must not be after createdTo/],
      ["error=", /^error must not be empty/],
      ["idPrefix=", /^idPrefix must not be empty/],
      ["key=a%00b", /^key must be a non-empty string of printable text/],
      ["sort=id", /^unknown query parameter "sort"/],
    ];
    for (const [query, message] of refused) {
      const { status, body } = await call("GET", `/v1/jobs?${query}`);
      expect(status, query).toBe(400);
      expect(body.error.code, query).toBe("invalid_request");
      expect(body.error.message, query).toMatch(message);
    }
  });
});

describe("POST /v1/jobs/bulk", () => {
  test("retries the dead jobs a filter matches, answering what it matched, changed and skipped, and where to go on", async () => {
    const { call } = await world();
    const { status, body } = await call("POST", "/v1/jobs/bulk", { action: "retry", filter: { queue: "invoices" } });
    expect(status).toBe(200);
    expect(body).toEqual({ matched: 3, changed: 2, skipped: { not_dead_or_cancelled: 1 }, nextCursor: null });
    expect(ids((await call("GET", "/v1/jobs?queue=invoices&status=queued")).body)).toEqual(["inv-1", "inv-2"]);
    expect((await call("GET", "/v1/jobs/mail-1")).body.status).toBe("dead");
  });

  test("a dry run answers what matched and changes nothing; a limit stops it with a cursor to go on from", async () => {
    const { call, snapshot } = await world();
    const before = await snapshot();
    expect((await call("POST", "/v1/jobs/bulk", { action: "delete", filter: { status: ["dead", "done"] }, dryRun: true })).body).toEqual({ matched: 3, changed: 0, skipped: {}, nextCursor: null });
    expect(await snapshot()).toEqual(before);
    expect((await call("POST", "/v1/jobs/bulk", { action: "delete", filter: { status: "dead" }, limit: 2 })).body).toEqual({ matched: 2, changed: 2, skipped: {}, nextCursor: "inv-2" });
    expect((await call("POST", "/v1/jobs/bulk", { action: "delete", filter: { status: "dead" }, cursor: "inv-2" })).body).toEqual({ matched: 1, changed: 1, skipped: {}, nextCursor: null });
    expect((await call("GET", "/v1/jobs")).body.jobs.map((job: { id: string }) => job.id)).toEqual(["inv-3", "mail-2"]);
  });

  test("a bulk cancel of held jobs: each holder's complete is then refused, 409 stale_lease, reason cancelled", async () => {
    const { call } = await world();
    expect((await call("POST", "/v1/jobs/mail-2/claim", { owner: "V", ttlMs: TTL })).status).toBe(200);
    expect((await call("POST", "/v1/jobs/bulk", { action: "cancel", filter: { status: "leased" }, by: "ops", reason: "bad deploy" })).body).toEqual({ matched: 2, changed: 2, skipped: {}, nextCursor: null });
    for (const [id, owner] of [["inv-3", "W"], ["mail-2", "V"]]) {
      const { status, body } = await call("POST", `/v1/jobs/${id}/complete`, { owner, fence: 1, result: "late" });
      expect(status, id).toBe(409);
      expect(body.error).toMatchObject({ code: "stale_lease", details: { reason: "cancelled" } });
    }
  });

  test("a bad request is 400 invalid_request naming its field, and changes nothing", async () => {
    const { call, snapshot } = await world();
    const before = await snapshot();
    const refused: [unknown, RegExp][] = [
      [{ action: "purge" }, /^action must be one of retry, cancel, delete/],
      [{ action: "retry", limit: 10_001 }, /^limit must be at most 10000/],
      [{ action: "retry", filter: { status: [] } }, /^filter\.status/],
      [{ action: "retry", filter: { createdFrom: 2, createdTo: 1 } }, /^createdFrom must not be after createdTo/],
      [{ action: "retry", filter: { color: "red" } }, /^filter unknown field "color"/],
      [{ filter: {} }, /^action must be one of retry, cancel, delete/],
    ];
    for (const [request, message] of refused) {
      const { status, body } = await call("POST", "/v1/jobs/bulk", request);
      expect(status, JSON.stringify(request)).toBe(400);
      expect(body.error.code).toBe("invalid_request");
      expect(body.error.message, JSON.stringify(request)).toMatch(message);
    }
    expect(await snapshot()).toEqual(before);
  });

  test("a token limited to one queue acts on its jobs only: another queue named is 403, and no filter touches only its own", async () => {
    const { call, snapshot } = await world();
    const { token } = (await call("POST", "/v1/tokens", { role: "admin", queues: ["invoices"] })).body;
    const as = { Authorization: `Bearer ${token}` };
    const before = await snapshot();
    const named = await call("POST", "/v1/jobs/bulk", { action: "delete", filter: { queue: "mail" } }, as);
    expect(named.status).toBe(403);
    expect(named.body.error).toMatchObject({ code: "forbidden", message: expect.stringContaining("may not manage mail") });
    expect(await snapshot()).toEqual(before);
    expect((await call("POST", "/v1/jobs/bulk", { action: "delete", filter: { status: "dead" } }, as)).body).toEqual({ matched: 2, changed: 2, skipped: {}, nextCursor: null });
    const after = await snapshot();
    expect(Object.keys(after)).toEqual(["inv-3", "mail-1", "mail-2"]);
    expect(after["mail-1"]).toEqual(before["mail-1"]);
    const { token: reader } = (await call("POST", "/v1/tokens", { role: "reader", queues: ["*"] })).body;
    expect((await call("POST", "/v1/jobs/bulk", { action: "cancel" }, { Authorization: `Bearer ${reader}` })).status).toBe(403);
  });
});
