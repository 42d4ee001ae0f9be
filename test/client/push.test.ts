import { describe, expect, test } from "vitest";
import { InvalidRequestError, LeaseClient, NotFoundError, verifyPush } from "../../src/client/index.ts";
import { startServer } from "../../src/node.ts";
import { freshUrl } from "../fresh-db.ts";
import { answerWith, startEndpoint } from "../push/endpoint.ts";

// client.push against the real Node server: set (the secret once), get,
// rotate and delete answer what the routes answer, and an endpoint set this
// way receives the queue's jobs, signed with the secret set answered.

const TOKEN = "client-push-token";

describe("client.push", () => {
  test("set answers the secret once, get never, rotate a new one; a job is delivered signed with it; delete stops it", async () => {
    await using server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: freshUrl(), auth: { tokens: [TOKEN] }, pushPrivate: "allow" }).then((running) => ({ ...running, [Symbol.asyncDispose]: () => running.stop() }));
    const client = new LeaseClient({ baseUrl: server.url, token: TOKEN });
    const endpoint = await startEndpoint(answerWith(200, { ok: true }));
    const created = await client.push.set("mail", { url: endpoint.url, maxInFlight: 3 });
    expect(created).toMatchObject({ queue: "mail", url: endpoint.url, maxInFlight: 3, timeoutMs: 10_000, secret: expect.stringMatching(/^whsec_/) });
    const changed = await client.push.set("mail", { url: endpoint.url, timeoutMs: 3_000 });
    expect(changed).not.toHaveProperty("secret");
    expect(await client.push.get("mail")).toEqual(changed);
    const { secret } = await client.push.rotate("mail");

    await client.enqueue({ id: "job-1", queue: "mail" });
    expect(await client.waitFor("job-1", { timeoutMs: 5_000 })).toMatchObject({ status: "done", result: { ok: true } });
    const [request] = endpoint.received;
    for (const each of [secret, (created as { secret: string }).secret]) expect((await verifyPush({ headers: request!.headers, body: request!.body }, each)).job.id).toBe("job-1");

    await client.push.delete("mail");
    await expect(client.push.get("mail")).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.push.rotate("mail")).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.push.set("mail", { url: "ftp://mail.example/" })).rejects.toBeInstanceOf(InvalidRequestError);
  });
});
