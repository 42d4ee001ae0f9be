import { describe, expect, test } from "vitest";
import { verifyPush } from "../../src/client/index.ts";
import { answerWith, startEndpoint } from "../push/endpoint.ts";
import { serving } from "./process.ts";

// The push commands (push set/get/rotate/rm) against a real server: what they
// print, the secret once, and the endpoint they leave the queue pushed to.

describe("the push commands", () => {
  test("push set prints the settings and the secret once; a later set keeps what it does not name; rotate prints a new secret; rm stops it", async () => {
    await using s = await serving();
    const endpoint = await startEndpoint(answerWith(200, { ok: true }));
    const created = await s.run("push", "set", "mail", "--endpoint", endpoint.url, "--max-in-flight", "3");
    expect(created.code).toBe(0);
    const [settings, secretLine, note] = created.stdout.trimEnd().split("\n");
    expect(settings).toBe(`mail  ${endpoint.url}  timeout 10000 ms  maxInFlight 3  signed with 1 secret`);
    expect(secretLine).toMatch(/^secret whsec_[A-Za-z0-9+/]{43}=$/);
    expect(note).toBe("shown this once: keep it where the endpoint reads it (verifyPush in fencelease/client)");
    const first = secretLine!.slice("secret ".length);

    const changed = await s.run("push", "set", "mail", "--timeout-ms", "2500");
    expect(changed).toEqual({ code: 0, stdout: `mail  ${endpoint.url}  timeout 2500 ms  maxInFlight 3  signed with 1 secret\n`, stderr: "" });
    expect(await s.read("/v1/queues/mail/push")).toMatchObject({ url: endpoint.url, timeoutMs: 2_500, maxInFlight: 3 });
    expect(JSON.parse((await s.run("push", "get", "mail", "--json")).stdout)).toEqual(await s.read("/v1/queues/mail/push"));
    expect((await s.run("push", "list")).stdout).toBe(`mail  ${endpoint.url}  timeout 2500 ms  maxInFlight 3  signed with 1 secret\n`);

    const rotated = await s.run("push", "rotate", "mail");
    expect(rotated.stdout).toMatch(/^secret whsec_\S+\nshown this once: keep it where the endpoint reads it \(verifyPush in fencelease\/client\)\nthe secret before it signs too, until the next rotation\n$/);
    const second = rotated.stdout.split("\n")[0]!.slice("secret ".length);
    expect((await s.run("push", "get", "mail")).stdout).toMatch(/signed with 2 secrets \(rotated \d{4}-/);

    await s.run("enqueue", "job-1", "--queue", "mail");
    expect((await s.run("get", "job-1", "--wait", "5000", "--json")).stdout).toContain('"status":"done"');
    const [request] = endpoint.received;
    for (const secret of [first, second]) expect((await verifyPush({ headers: request!.headers, body: request!.body }, secret)).job.id).toBe("job-1");

    expect(await s.run("push", "rm", "mail")).toEqual({ code: 0, stdout: "queue mail is no longer pushed; its jobs wait for workers, deliveries on their way end as usual\n", stderr: "" });
    expect(await s.run("push", "get", "mail")).toMatchObject({ code: 3, stderr: 'fencelease: not_found: queue "mail" has no push endpoint\n' });
    expect(await s.run("push", "list")).toEqual({ code: 0, stdout: "no pushed queues\n", stderr: "" });
  });

  test.each([
    ["a first set without --endpoint", 2, ["push", "set", "mail"], /--endpoint URL is required: the queue has no push endpoint yet/],
    ["an endpoint the server refuses", 2, ["push", "set", "mail", "--endpoint", "ftp://mail.example/"], /^fencelease: invalid_request: url must be an http: or https: URL/],
    ["a --max-in-flight that is no number", 2, ["push", "set", "mail", "--endpoint", "https://mail.example/", "--max-in-flight", "many"], /--max-in-flight must be a whole number/],
    ["a rotation of a queue without push", 3, ["push", "rotate", "mail"], /not_found: queue "mail" has no push endpoint/],
    ["push without what to do", 2, ["push"], /push needs one of list, set, get, rotate, rm/],
  ])("%s: exit %i, one line, nothing changed", async (_, code, args, message) => {
    await using s = await serving();
    const ran = await s.run(...args);
    expect(ran.code).toBe(code);
    expect(ran.stdout).toBe("");
    expect(ran.stderr).toMatch(message);
    expect(ran.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect((await fetch(`${s.server.url}/v1/queues/mail/push`, { headers: { Authorization: "Bearer cli-test-token" } })).status).toBe(404);
  });
});
