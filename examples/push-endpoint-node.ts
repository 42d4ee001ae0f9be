// A push endpoint on Node: fencelease POSTs each due job of a queue here
// (docs/push.md). It checks the signature with verifyPush, does the work, and
// answers: a 2xx completes the job with the answer's body as its result, any
// other status fails it (due again after the backoff, or your Retry-After). A
// job whose payload says `{ "long": true }` is answered 202 at once and
// finished in the background with the owner and fence of its delivery:
// renewed while it runs, then completed; a completion after the lease was
// lost is refused (LeaseLostError), and nothing is written twice.
//
// From this repository, beside `npm start`:
//
//   npx fencelease push set words --endpoint http://127.0.0.1:8790/ # prints the secret, once
//   PUSH_SECRET=whsec_... PORT=8790 node_modules/.bin/node examples/push-endpoint-node.ts
//   npx fencelease enqueue doc-1 --queue words --payload '{"text":"one two three"}'
//
// PUSH_SECRET may hold two secrets, comma-separated, while a rotation is under
// way. node_modules/.bin/node is the Node 24 of the devDependency `node` (a .ts
// file runs on a Node that strips types, 22.18 and later), run itself rather
// than through `npx node`, so that a SIGTERM to its pid reaches it. On SIGINT
// or SIGTERM it stops: it takes no new delivery, finishes the jobs it
// answered 202, then exits.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { LeaseClient, LeaseLostError, type PushDelivery, verifyPush } from "fencelease/client";

const secrets = (process.env.PUSH_SECRET ?? "").split(",").filter(Boolean);
if (secrets.length === 0) throw new Error("set PUSH_SECRET to the whsec_... secret that `fencelease push set` printed");
const client = new LeaseClient({ baseUrl: process.env.FENCELEASE_URL ?? "http://127.0.0.1:8787", token: process.env.FENCELEASE_TOKEN });

/** What this queue's jobs carry. */
type Doc = { text?: string; long?: boolean } | null;

/** The work itself: count the words. */
const count = (doc: Doc) => ({ words: String(doc?.text ?? "").split(/\s+/).filter(Boolean).length });

/** The body of a request, as text: verifyPush checks the bytes as they were signed. */
async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** The jobs answered 202 and not finished yet: a stop waits for them. */
const finishing = new Set<Promise<void>>();

/** Work longer than one request: renew the lease while it runs, then complete it, all with the delivery's owner and fence. */
async function finishLater({ job, owner, fence }: PushDelivery<Doc>): Promise<void> {
  try {
    await client.renew(job.id, { owner, fence, ttlMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 100)); // the long part
    await client.complete(job.id, { owner, fence, result: count(job.payload) });
    console.log(`finished ${job.id} with fence ${fence}`);
  } catch (error) {
    // The lease was lost (it ran out, the job was cancelled): its result must not be written anywhere.
    if (error instanceof LeaseLostError) console.log(`dropped ${job.id}: fence ${fence} is no longer current`);
    else console.error(`${job.id}: ${(error as Error).message}`);
  }
}

const server = createServer(async (request, response) => {
  let push: PushDelivery<Doc>;
  try {
    push = await verifyPush<Doc>({ headers: request.headers, body: await bodyOf(request) }, secrets);
  } catch (error) {
    response.writeHead(401, { "content-type": "text/plain" }).end((error as Error).message);
    return;
  }
  if (push.job.payload?.long) {
    response.writeHead(202).end();
    const finished = finishLater(push).finally(() => finishing.delete(finished));
    finishing.add(finished);
    return;
  }
  console.log(`processed ${push.job.id} with fence ${push.fence}`);
  response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(count(push.job.payload)));
});
server.listen(Number(process.env.PORT ?? 8790), "127.0.0.1", () => {
  console.log(`push endpoint on http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
});
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    console.log(`${signal}: taking no new delivery, finishing ${finishing.size} job(s) answered 202, then stopping`);
    server.close(); // no new connection; the idle ones close at once, a delivery being answered finishes first
    server.closeIdleConnections();
    await Promise.all(finishing);
    console.log("push endpoint stopped");
  });
}
