import { createHash } from "node:crypto";
import { describe, expect, test } from "vitest";
import { cli, serving } from "./process.ts";

// The token commands (tokens, token create, token revoke, token self) against
// a real server: what they print, in words and in JSON, what the database
// keeps, and how a refused command ends.

describe("the token commands", () => {
  test("token create prints the id, what it may do and the secret, once; the table keeps only its SHA-256", async () => {
    await using s = await serving();
    const made = await s.run("token", "create", "--role", "worker", "--queues", "invoices, mail-*", "--name", "billing");
    expect(made).toEqual({ code: 0, stdout: expect.stringMatching(/^made token tok_[0-9a-f]{16} "billing": worker for invoices, mail-\*\nfl_[\w-]{43}\nkeep the secret above now: it is never shown again\n$/), stderr: "" });
    const [, secret] = made.stdout.split("\n");
    const [row] = await s.rows("SELECT * FROM tokens");
    expect(row).toMatchObject({ role: "worker", queues: '["invoices","mail-*"]', name: "billing", hash: createHash("sha256").update(secret!).digest("hex") });
    expect(JSON.stringify(row)).not.toContain(secret);
  });

  test("tokens lists them without secrets; --json answers the server's list", async () => {
    await using s = await serving();
    expect(await s.run("tokens")).toEqual({ code: 0, stdout: "no tokens (besides FENCELEASE_TOKENS)\n", stderr: "" });
    const made = JSON.parse((await s.run("token", "create", "--role", "reader", "--queues", "*", "--json")).stdout);
    expect(made).toMatchObject({ role: "reader", queues: ["*"], name: null, token: expect.stringMatching(/^fl_/) });
    await s.run("token", "create", "--role", "admin", "--queues", "ops", "--name", "on call");
    const listed = await s.run("tokens");
    expect(listed.stdout).toMatch(new RegExp(`^${made.id}  reader for every queue  -          made \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\ntok_[0-9a-f]{16}  admin for ops           "on call"  made .*Z\\n$`));
    expect(listed.stdout).not.toContain(made.token);
    expect(JSON.parse((await s.run("tokens", "--json")).stdout).tokens.map((token: { role: string }) => token.role)).toEqual(["reader", "admin"]);
  });

  test("token self says what the token in use may do", async () => {
    await using s = await serving();
    expect(await s.run("token", "self")).toEqual({ code: 0, stdout: "this token: admin for every queue (one of FENCELEASE_TOKENS, or auth is off)\n", stderr: "" });
    const { id, token } = JSON.parse((await s.run("token", "create", "--role", "producer", "--queues", "invoices", "--name", "shop", "--json")).stdout);
    const self = await cli(["token", "self"], { FENCELEASE_URL: s.server.url, FENCELEASE_TOKEN: token });
    expect(self).toEqual({ code: 0, stdout: `this token: producer for invoices (${id}, "shop")\n`, stderr: "" });
  });

  test("token revoke: the token is refused at once (exit 6), and the row is gone", async () => {
    await using s = await serving();
    const { id, token } = JSON.parse((await s.run("token", "create", "--role", "reader", "--queues", "*", "--json")).stdout);
    const asIt = (...args: string[]) => cli(args, { FENCELEASE_URL: s.server.url, FENCELEASE_TOKEN: token });
    expect((await asIt("stats")).code).toBe(0);
    expect(await s.run("token", "revoke", id)).toEqual({ code: 0, stdout: `revoked token ${id}: refused from now on (by other servers on the same database within 5 s)\n`, stderr: "" });
    expect(await asIt("stats")).toEqual({ code: 6, stdout: "", stderr: "fencelease: unauthorized: the bearer token is not valid (or was revoked)\n" });
    expect(await s.rows("SELECT * FROM tokens")).toEqual([]);
    expect(await s.run("token", "revoke", id)).toEqual({ code: 3, stdout: "", stderr: `fencelease: not_found: no token has the id "${id}"\n` });
  });

  test("a command the token may not run exits 7 with the server's words, and changes nothing", async () => {
    await using s = await serving();
    const { token } = JSON.parse((await s.run("token", "create", "--role", "worker", "--queues", "invoices", "--json")).stdout);
    const refused = await cli(["enqueue", "job-1", "--queue", "invoices"], { FENCELEASE_URL: s.server.url, FENCELEASE_TOKEN: token });
    expect(refused).toEqual({ code: 7, stdout: "", stderr: "fencelease: forbidden: this token (worker for invoices) may not enqueue into invoices: that needs a producer or admin token for invoices\n" });
    expect(await s.snapshot()).toEqual({});
  });

  test.each([
    [["token", "create", "--queues", "*"], "fencelease: --role is required: admin, producer, worker or reader (see fencelease --help)\n"],
    [["token", "create", "--role", "reader"], 'fencelease: --queues is required: the queues the token may touch, comma-separated ("invoices,mail-*"), or "*" for every queue (see fencelease --help)\n'],
    [["token", "create", "--role", "root", "--queues", "*"], "fencelease: invalid_request: role must be one of admin, producer, worker, reader\n"],
    [["token", "create", "--role", "reader", "--queues", "a*b"], 'fencelease: invalid_request: queues[0] may have a * only at its end (a prefix, such as "mail-*"), got "a*b"\n'],
    [["token"], "fencelease: token needs one of create, revoke, self (see fencelease --help)\n"],
    [["token", "revoke"], "fencelease: token revoke needs a token id (see fencelease --help)\n"],
    [["enqueue", "job-1", "--queues", "mail"], "fencelease: --queues is an option of token create only; did you mean --queue? (see fencelease --help)\n"],
    [["token", "self", "--role", "admin"], "fencelease: --role is an option of token create only (see fencelease --help)\n"],
  ])("%j: exit 2, naming what is wrong, and nothing is made", async (args, stderr) => {
    await using s = await serving();
    expect(await s.run(...args)).toEqual({ code: 2, stdout: "", stderr });
    expect(await s.rows("SELECT * FROM tokens")).toEqual([]);
    expect(await s.snapshot()).toEqual({});
  });
});
