import { createClient } from "@libsql/client";
import { describe, expect, test, vi } from "vitest";
import { authFromEnv } from "../../src/index.ts";
import { freshApp } from "../fresh-app.ts";
import type { ErrorBody } from "../../src/http/errors.ts";

describe("bearer auth", () => {
  test("any one of the configured tokens is let in", async () => {
    const { app } = await freshApp({ auth: authFromEnv({ FENCELEASE_TOKENS: "old-token, new-token" }) });
    for (const token of ["old-token", "new-token"]) {
      const response = await app.request("/v1/jobs/none", { headers: { Authorization: `Bearer ${token}` } });
      expect(response.status, token).toBe(404); // past auth, to the route
    }
  });

  test.each([
    ["no Authorization header", undefined],
    ["another scheme", "Basic dGVzdC10b2tlbg=="],
    ["a wrong token", "Bearer nope"],
    ["a prefix of the token", "Bearer test-tok"],
    ["an empty bearer", "Bearer "],
  ])("%s: 401 unauthorized with WWW-Authenticate", async (_, header) => {
    const { app, snapshot } = await freshApp();
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (header !== undefined) headers.Authorization = header;
    const response = await app.request("/v1/jobs", { method: "POST", headers, body: '{"id":"x"}' });
    expect(response.status).toBe(401);
    expect(response.headers.get("WWW-Authenticate")).toBe('Bearer realm="fencelease"');
    expect(((await response.json()) as ErrorBody).error.code).toBe("unauthorized");
    expect(await snapshot()).toEqual({});
  });

  test("a token proven once is let in again, and a wrong one after it still is not", async () => {
    const { app } = await freshApp();
    for (const [token, status] of [["test-token", 404], ["test-token", 404], ["test-tokens", 401], ["", 401]] as const) {
      const response = await app.request("/v1/jobs/none", { headers: { Authorization: `Bearer ${token}` } });
      expect(response.status, token).toBe(status);
    }
  });

  test("only /healthz and the OpenAPI document are open: the API and /metrics need the token", async () => {
    const { app } = await freshApp();
    expect((await app.request("/healthz")).status).toBe(200);
    expect((await app.request("/openapi.json")).status).toBe(200);
    expect((await app.request("/metrics")).status).toBe(401);
    expect((await app.request("/v1/stats")).status).toBe(401);
  });

  test("no token configured fails closed: every request, healthz too, is 503 naming the secret to set", async () => {
    const { app, snapshot } = await freshApp({ auth: authFromEnv({}) });
    for (const [method, path] of [["GET", "/healthz"], ["POST", "/v1/jobs"], ["GET", "/openapi.json"]] as const) {
      const response = await app.request(path, { method, headers: { Authorization: "Bearer anything" } });
      expect(response.status, path).toBe(503);
      const { error } = (await response.json()) as ErrorBody;
      expect(error.code).toBe("unavailable");
      expect(error.message).toContain("FENCELEASE_TOKENS");
    }
    expect(await snapshot()).toEqual({});
  });

  test("FENCELEASE_AUTH=off lets requests in without a token, but only when no token is set", async () => {
    const off = await freshApp({ auth: authFromEnv({ FENCELEASE_AUTH: "off" }) });
    expect((await off.app.request("/v1/jobs/none")).status).toBe(404);
    expect(authFromEnv({ FENCELEASE_AUTH: "off", FENCELEASE_TOKENS: "t" })).toEqual({ tokens: ["t"] });
  });
});

describe("auth off: this machine's callers only", () => {
  test.each([
    ["a Host that is not a loopback name (DNS rebinding)", "http://evil.example:8787/v1/jobs", {}, /the Host evil\.example is not one/],
    ["a private address", "http://192.168.1.5:8787/v1/jobs", {}, /the Host 192\.168\.1\.5 is not one/],
    ["a cross-site Origin", "http://127.0.0.1:8787/v1/jobs", { Origin: "https://evil.example" }, /the Origin https:\/\/evil\.example is not this machine/],
    ["an opaque Origin", "http://localhost:8787/v1/jobs", { Origin: "null" }, /the Origin null is not this machine/],
  ])("refuses %s with 403 and writes nothing", async (_, url, headers, says) => {
    const { app, snapshot } = await freshApp({ auth: "off" });
    const response = await app.request(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: '{"id":"x"}' });
    expect(response.status).toBe(403);
    const { error } = (await response.json()) as ErrorBody;
    expect(error.code).toBe("forbidden");
    expect(error.message).toMatch(says);
    expect(await snapshot()).toEqual({});
  });

  test.each([
    ["127.0.0.1", "http://127.0.0.1:8787/v1/jobs", {}],
    ["localhost with a page of its own", "http://localhost:8787/v1/jobs", { Origin: "http://localhost:5173" }],
    ["[::1]", "http://[::1]:8787/v1/jobs", { Origin: "http://[::1]:8787" }],
  ])("lets %s in", async (_, url, headers) => {
    const { app } = await freshApp({ auth: "off" });
    const response = await app.request(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: '{"id":"x"}' });
    expect(response.status).toBe(201);
  });

  test("with tokens the Host and Origin are the token's business: a good token is let in from anywhere", async () => {
    const { app } = await freshApp();
    const response = await app.request("http://fencelease.example.com/v1/jobs/none", { headers: { Authorization: "Bearer test-token", Origin: "https://dashboard.example.com" } });
    expect(response.status).toBe(404);
  });
});

describe("unexpected errors", () => {
  test("answer a plain 500 that shows no SQL, no stack and no internals", async () => {
    const { call, url } = await freshApp();
    const sql = createClient({ url });
    await sql.execute("DROP TABLE jobs"); // the store's statements now fail in a way no retry mends
    sql.close();
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const answer = await call("POST", "/v1/jobs", { id: "x" });
    expect(logged).toHaveBeenCalledWith("fencelease: unexpected error", expect.any(Error)); // the operator sees it
    logged.mockRestore();
    expect(answer.status).toBe(500);
    expect(answer.body).toEqual({ error: { code: "internal_error", message: "internal error" } });
  });
});
