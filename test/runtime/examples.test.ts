import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { expect, onTestFinished, test } from "vitest";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { type ChargeCard, chargeInvoice, chargeKey, type Invoice } from "../../examples/charge-once.ts";
import { chargeAndEmail, type Order, servicesAt, stepKey } from "../../examples/steps-charge-and-email.ts";
import { LeaseClient, LeaseLostError, withLease } from "../../src/client/index.ts";
import { startServer } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";

const TOKEN = "examples-token";

/**
 * The command of the example's run line, as its header gives it (the line
 * that ends in `examples/<name>`, and sets `variable` when one is named: the
 * worker's header has one over HTTP and one embedded), less the variables it
 * sets: the test sets them.
 */
function runLine(name: string, variable?: string): string {
  const line = readFileSync(`examples/${name}`, "utf8")
    .split("\n")
    .find((text) => text.startsWith("//   ") && text.trimEnd().endsWith(`examples/${name}`) && (variable === undefined || text.includes(` ${variable}=`)));
  return line!.slice(2).trim().replace(/^(\w+=\S+\s+)+/, "");
}

/**
 * Runs the example's run line as a shell runs a command typed at it: the pid
 * that `kill` is given is the process the line starts. The package's name
 * resolves to the sources here (not dist/, which the package test rebuilds).
 */
function startExample(command: string, env: Record<string, string>) {
  const child = spawn("sh", ["-c", `exec ${command}`], {
    env: { ...process.env, NODE_OPTIONS: "--conditions=fencelease-source", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  onTestFinished(() => {
    try {
      process.kill(-child.pid!, "SIGKILL"); // whatever the line left behind
    } catch {
      // nothing left
    }
  });
  return child;
}

test.each([
  ["over HTTP", "FENCELEASE_URL"],
  ["embedded, over a store of its own on the file", "DATABASE_URL"],
])("examples/node-worker.ts, run by the line its header and docs/client.md give, works through a queue %s, then stops gracefully on a SIGTERM to its pid", async (_, variable) => {
  const command = runLine("node-worker.ts", variable);
  expect(command).toBe("node_modules/.bin/node examples/node-worker.ts");
  expect(readFileSync("docs/client.md", "utf8")).toMatch(new RegExp(`\`${variable}=\\S+ QUEUE=thumbnails node_modules/\\.bin/node examples/node-worker\\.ts\``));
  const { url, snapshot } = await freshStore();
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: [TOKEN] } });
  const client = new LeaseClient({ baseUrl: server.url, token: TOKEN });
  const reach: Record<string, string> = variable === "FENCELEASE_URL" ? { FENCELEASE_URL: server.url, FENCELEASE_TOKEN: TOKEN } : { DATABASE_URL: url };
  const child = startExample(command, { ...reach, QUEUE: "words", IDLE_MS: "20" });
  try {
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    expect((await lines.next()).value).toBe(`node-worker-${child.pid} taking jobs from queue words`);
    // Embedded, the jobs come from another process (this one, through the server): the worker's room finds them within its re-check.
    for (let i = 0; i < 5; i++) await client.enqueue({ id: `doc-${i}`, queue: "words", payload: { text: "one two three ".repeat(i) } });
    for (let i = 0; i < 5; i++) expect((await lines.next()).value).toMatch(/^processed doc-\d with fence 1$/);

    child.kill("SIGTERM");
    const [code] = await once(child, "exit");
    expect(code).toBe(0);
    const rest: string[] = [];
    for await (const line of { [Symbol.asyncIterator]: () => lines }) rest.push(line);
    expect(rest).toEqual(["SIGTERM: finishing the job in hand, then stopping", `node-worker-${child.pid} stopped`]);

    const rows = await snapshot();
    for (let i = 0; i < 5; i++) {
      expect(rows[`doc-${i}`]).toMatchObject({ owner: `node-worker-${child.pid}`, fence: 1, done: 1, result: JSON.stringify({ words: 3 * i }) });
    }
  } finally {
    await server.stop();
  }
});

test("examples/push-endpoint-node.ts takes a pushed queue's jobs: answers one with its result, finishes a long one itself after a 202, refuses an unsigned request", async () => {
  const { url, snapshot } = await freshStore();
  // The example's endpoint listens on 127.0.0.1: a private address, which a server with tokens pushes to only when told.
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: [TOKEN] }, pushPrivate: "allow" });
  const client = new LeaseClient({ baseUrl: server.url, token: TOKEN });
  // The secret first (the endpoint needs it to start), then the endpoint's real URL: a later set keeps the secret.
  const { secret } = (await client.push.set("words", { url: "http://127.0.0.1:9/" })) as { secret: string };
  expect(runLine("push-endpoint-node.ts")).toBe("node_modules/.bin/node examples/push-endpoint-node.ts");
  const child = startExample(runLine("push-endpoint-node.ts"), { FENCELEASE_URL: server.url, FENCELEASE_TOKEN: TOKEN, PUSH_SECRET: secret, PORT: "0" });
  try {
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const endpoint = /^push endpoint on (http:\/\/127\.0\.0\.1:\d+\/)$/.exec(String((await lines.next()).value))![1]!;
    expect((await fetch(endpoint, { method: "POST", body: "{}" })).status).toBe(401);
    await client.push.set("words", { url: endpoint });
    await client.enqueue({ id: "doc-1", queue: "words", payload: { text: "one two three" } });
    expect((await lines.next()).value).toBe("processed doc-1 with fence 1");
    await client.enqueue({ id: "doc-2", queue: "words", payload: { text: "four five", long: true } });
    expect((await lines.next()).value).toBe("finished doc-2 with fence 1");
    const rows = await snapshot();
    expect(rows["doc-1"]).toMatchObject({ owner: "push", fence: 1, done: 1, result: '{"words":3}' });
    expect(rows["doc-2"]).toMatchObject({ owner: "push", fence: 1, done: 1, result: '{"words":2}' });
    expect((await client.events("doc-2")).events.map((event) => [event.kind, event.action, event.httpStatus])).toEqual([
      ["enqueued", null, null], ["claimed", null, null], ["pushed", "accepted", 202], ["renewed", null, null], ["completed", null, null],
    ]);

    // A SIGTERM to its pid: no new delivery, the jobs answered 202 finished, then it exits.
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    expect(await exited).toEqual([0, null]);
    const rest: string[] = [];
    for await (const line of { [Symbol.asyncIterator]: () => lines }) rest.push(line);
    expect(rest).toEqual(["SIGTERM: taking no new delivery, finishing 0 job(s) answered 202, then stopping", "push endpoint stopped"]);
  } finally {
    await server.stop();
  }
});

/**
 * A payment provider that honours idempotency keys, as Stripe's does: the
 * first call with a key makes the charge; a later one with the same key makes
 * none and answers the first one's charge. `stallFirst` holds the first call's
 * answer back, its charge made, until `resume` is called: a worker stalled
 * mid-charge.
 */
function paymentProvider() {
  const charges: { chargeId: string; key: string; invoice: Invoice }[] = [];
  const keys: string[] = [];
  let charged = () => {};
  let resume = () => {};
  const firstCharged = new Promise<void>((resolve) => (charged = resolve));
  const resumed = new Promise<void>((resolve) => (resume = resolve));
  const charge: ChargeCard = async (invoice, { idempotencyKey }) => {
    keys.push(idempotencyKey);
    let made = charges.find((charge) => charge.key === idempotencyKey);
    if (made === undefined) charges.push((made = { chargeId: `ch_${charges.length + 1}`, key: idempotencyKey, invoice }));
    if (keys.length === 1) {
      charged();
      await resumed;
    }
    return { chargeId: made.chargeId };
  };
  return { charge, charges, keys, firstCharged, resume };
}

test("examples/charge-once.ts charges once when a worker stalls mid-charge past its lease and a second lease charges again; the stalled worker's complete is refused", async () => {
  const { url, snapshot } = await freshStore();
  const clock = { now: Date.now() }; // the server's clock, moved past a lease instead of waiting for it
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: [TOKEN] }, clock: () => clock.now });
  const client = new LeaseClient({ baseUrl: server.url, token: TOKEN });
  const provider = paymentProvider();
  const handler = chargeInvoice(provider.charge);
  try {
    const invoice = { card: "4242", cents: 1200 };
    await client.enqueue({ id: "invoice-7", queue: "invoices", payload: invoice });
    await client.enqueue({ id: "invoice-8", queue: "other", payload: { card: "1881", cents: 5 } });

    const a = withLease(client, { queue: "invoices" }, handler, { owner: "worker-a", ttlMs: 30_000 }).catch((error: unknown) => error);
    await provider.firstCharged; // A's charge is made; A stalls before it hears back
    clock.now += 30_000; // A's lease has run out: now == until
    const b = await withLease(client, { queue: "invoices" }, handler, { owner: "worker-b", ttlMs: 30_000 });
    expect(b).toMatchObject({ id: "invoice-7", status: "done", owner: "worker-b", fence: 2, result: { chargeId: "ch_1" } });
    provider.resume();
    const late = await a;
    expect(late).toBeInstanceOf(LeaseLostError);
    expect((late as LeaseLostError).reason).toBe("superseded"); // a newer lease took the job

    expect(provider.keys).toEqual([chargeKey("invoice-7"), chargeKey("invoice-7")]); // two leases asked
    expect(provider.charges).toEqual([{ chargeId: "ch_1", key: "invoice-7/charge", invoice }]); // one charge
    const rows = await snapshot();
    expect(rows["invoice-7"]).toMatchObject({ owner: "worker-b", fence: 2, done: 1, attempts: 2, result: JSON.stringify({ chargeId: "ch_1" }) });
    expect(rows["invoice-8"]).toMatchObject({ owner: null, fence: 0, done: 0, attempts: 0 });
    const { events } = await client.events("invoice-7");
    expect(events.map((event) => [event.kind, event.action, event.owner, event.fence])).toEqual([
      ["enqueued", null, null, null], ["claimed", null, "worker-a", 1], ["expired", null, "worker-a", 1],
      ["claimed", null, "worker-b", 2], ["completed", null, "worker-b", 2], ["refused", "complete", "worker-a", 1],
    ]);
  } finally {
    provider.resume();
    await server.stop();
  }
});

/** A call the simulated services held: answer it (and make its effect), or drop it unanswered (no effect). */
type Held = { answer: () => void; drop: () => void };

/**
 * A payment provider and a mailer over HTTP (POST /charges, POST /emails),
 * each making its effect once per Idempotency-Key, as Stripe's and most
 * mailers' APIs do: a later call with the same key makes none and answers the
 * first one's. `hold` holds back the first call of one path: a charge is made
 * but its answer withheld (a worker stalled mid-charge), an email is neither
 * sent nor answered until the test says (a worker killed while sending it).
 */
async function simulatedServices(hold: "/charges" | "/emails") {
  const made = { "/charges": new Map<string, string>(), "/emails": new Map<string, string>() };
  const calls: { path: string; key: string }[] = [];
  let arrived: (held: Held) => void = () => {};
  const firstHeld = new Promise<Held>((resolve) => (arrived = resolve));
  const effect = (path: "/charges" | "/emails", key: string) => {
    const kept = made[path];
    if (!kept.has(key)) kept.set(key, `${path === "/charges" ? "ch" : "msg"}_${kept.size + 1}`);
    return kept.get(key)!;
  };
  const answer = (response: ServerResponse, path: "/charges" | "/emails", id: string) =>
    response.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(path === "/charges" ? { chargeId: id } : { messageId: id }));
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    const path = request.url as "/charges" | "/emails";
    const key = String(request.headers["idempotency-key"]);
    calls.push({ path, key });
    const first = calls.filter((call) => call.path === hold).length === 1 && path === hold;
    if (!first) return answer(response, path, effect(path, key));
    if (path === "/charges") {
      const id = effect(path, key); // charged; the answer waits
      arrived({ answer: () => answer(response, path, id), drop: () => response.destroy() });
    } else arrived({ answer: () => answer(response, path, effect(path, key)), drop: () => response.destroy() });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${port}`, calls, firstHeld, charges: made["/charges"], emails: made["/emails"] };
}

/** The server on a fresh database, its clock the test's, and a client of it. */
async function ordersServer() {
  const fresh = await freshStore();
  const clock = { now: Date.now() }; // the server's clock, moved past a lease instead of waiting for it
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: fresh.url, auth: { tokens: [TOKEN] }, clock: () => clock.now });
  onTestFinished(() => server.stop());
  return { ...fresh, server, clock, client: new LeaseClient({ baseUrl: server.url, token: TOKEN }) };
}

const ORDER: Order = { card: "4242", cents: 1200, email: "ada@example.com" };

test("examples/steps-charge-and-email.ts: a worker process killed between its charge and its email; the next one charges nothing more and sends the one email", async () => {
  const command = runLine("steps-charge-and-email.ts");
  expect(command).toBe("node_modules/.bin/node examples/steps-charge-and-email.ts");
  const { server, clock, client } = await ordersServer();
  const services = await simulatedServices("/emails");
  await client.enqueue({ id: "order-1", queue: "orders", payload: ORDER });
  const env = { FENCELEASE_URL: server.url, FENCELEASE_TOKEN: TOKEN, PROVIDER_URL: services.url, QUEUE: "orders" };

  const first = startExample(command, env);
  const sending = await services.firstHeld; // its charge recorded, its email on the way
  expect((await client.get("order-1")).steps).toEqual({ charge: { result: { chargeId: "ch_1" }, fence: 1, at: expect.any(Number) } });
  const exited = once(first, "exit");
  process.kill(-first.pid!, "SIGKILL");
  expect(await exited).toEqual([null, "SIGKILL"]);
  sending.drop(); // the mailer never sent it: its caller is gone

  clock.now += 30_000; // the killed worker's lease runs out
  const second = startExample(command, env);
  const lines = createInterface({ input: second.stdout })[Symbol.asyncIterator]();
  expect((await lines.next()).value).toBe(`orders-${second.pid} taking orders`);
  expect((await lines.next()).value).toBe("order-1: charged ch_1, receipt msg_1");
  second.kill("SIGTERM");
  expect(await once(second, "exit")).toEqual([0, null]);

  expect(services.calls).toEqual([
    { path: "/charges", key: stepKey("order-1", "charge") },
    { path: "/emails", key: stepKey("order-1", "email") },
    { path: "/emails", key: stepKey("order-1", "email") }, // the second worker's: the charge was not asked again
  ]);
  expect([...services.charges.values()]).toEqual(["ch_1"]); // one charge
  expect([...services.emails.values()]).toEqual(["msg_1"]); // one email
  expect(await client.get("order-1")).toMatchObject({
    status: "done", fence: 2, owner: `orders-${second.pid}`, result: { chargeId: "ch_1", messageId: "msg_1" },
    steps: { charge: { result: { chargeId: "ch_1" }, fence: 1 }, email: { result: { messageId: "msg_1" }, fence: 2 } },
  });
});

test("examples/steps-charge-and-email.ts: a worker that stalls mid-charge past its lease wakes up to a refused step and sends no email; one charge, one email", async () => {
  const { clock, client } = await ordersServer();
  const services = await simulatedServices("/charges");
  const handler = chargeAndEmail(servicesAt(services.url));
  await client.enqueue({ id: "order-2", queue: "orders", payload: ORDER });

  const a = withLease(client, { queue: "orders" }, handler, { owner: "worker-a", ttlMs: 30_000 }).catch((error: unknown) => error);
  const stalled = await services.firstHeld; // A's charge is made; A stalls before it hears back
  clock.now += 30_000; // A's lease has run out
  const b = await withLease(client, { queue: "orders" }, handler, { owner: "worker-b", ttlMs: 30_000 });
  expect(b).toMatchObject({ id: "order-2", status: "done", owner: "worker-b", fence: 2, result: { chargeId: "ch_1", messageId: "msg_1" } });
  stalled.answer();
  const late = await a;
  expect(late).toBeInstanceOf(LeaseLostError);
  expect(late).toMatchObject({ reason: "superseded", currentFence: 2 });

  expect(services.calls).toEqual([
    { path: "/charges", key: stepKey("order-2", "charge") },
    { path: "/charges", key: stepKey("order-2", "charge") }, // B's, with the same key: no second charge
    { path: "/emails", key: stepKey("order-2", "email") }, // B's; A, awake, sends none
  ]);
  expect([...services.charges.values()]).toEqual(["ch_1"]);
  expect([...services.emails.values()]).toEqual(["msg_1"]);
  const { events } = await client.events("order-2");
  expect(events.filter((event) => event.kind === "refused").map((event) => [event.action, event.owner, event.fence])).toEqual([["step", "worker-a", 1]]);
  expect((await client.get("order-2")).steps).toMatchObject({ charge: { result: { chargeId: "ch_1" }, fence: 2 }, email: { fence: 2 } });
});
