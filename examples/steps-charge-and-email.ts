// A worker that charges an order and emails its receipt, each once, in two
// fenced steps (docs/client.md#effects-that-must-happen-once). A worker may die
// between the two, or stall past its lease and wake up; the job is then
// claimed again, and its new lease is handed the steps already recorded:
// `step("charge", ...)` answers the recorded charge without calling the
// provider again, and only the email is left to send. A stalled worker that
// wakes up cannot record a step any more (its lease is stale): its `step`
// throws LeaseLostError, and it sends nothing further.
//
// What a step cannot cover is the window between the call and its record: a
// worker killed (or stalled) after the provider charged and before the step
// was recorded. The next lease calls the provider again, with the same
// idempotency key: the job's id and the step's name, the same under every
// lease (never the fence, which changes with each), so the provider makes no
// second charge and answers the first.
//
// Run it beside a server, against the provider and the mailer at PROVIDER_URL
// (POST /charges and POST /emails, each with an Idempotency-Key header):
//
//   FENCELEASE_URL=http://127.0.0.1:8787 PROVIDER_URL=http://127.0.0.1:9000 QUEUE=orders node_modules/.bin/node examples/steps-charge-and-email.ts
//
// test/runtime/examples.test.ts runs it against a simulated provider and
// mailer that honour their keys: a worker process killed between the two
// steps, and a worker that stalls mid-charge past its lease.
import { type HeldLease, LeaseClient, runWorker } from "fencelease/client";

/** What an order job carries. */
export type Order = { card: string; cents: number; email: string };

/** The two effects, each of which the service makes once per idempotency key: a second call with the same key answers the first one's. */
export type Services = {
  charge(order: Order, options: { idempotencyKey: string; signal: AbortSignal }): Promise<{ chargeId: string }>;
  email(to: string, text: string, options: { idempotencyKey: string; signal: AbortSignal }): Promise<{ messageId: string }>;
};

/** The idempotency key of step `step` of job `id`: the same under every lease of the job. */
export const stepKey = (id: string, step: string) => `${id}:${step}`;

/** The handler of a queue of orders: charges each once, then emails its receipt once; answers both ids as the job's result. */
export function chargeAndEmail(services: Services) {
  return async ({ job, step, signal }: HeldLease<Order>): Promise<{ chargeId: string; messageId: string }> => {
    const order = job.payload;
    const { chargeId } = await step("charge", () => services.charge(order, { idempotencyKey: stepKey(job.id, "charge"), signal }));
    const { messageId } = await step("email", () => services.email(order.email, `Receipt: ${order.cents} cents, charge ${chargeId}`, { idempotencyKey: stepKey(job.id, "email"), signal }));
    return { chargeId, messageId };
  };
}

/** The services at `baseUrl`, over HTTP: POST /charges and POST /emails with JSON bodies and the Idempotency-Key header. */
export function servicesAt(baseUrl: string): Services {
  const post = async <T>(path: string, body: unknown, options: { idempotencyKey: string; signal: AbortSignal }): Promise<T> => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Key": options.idempotencyKey },
      body: JSON.stringify(body),
      signal: options.signal,
    });
    if (!response.ok) throw new Error(`${path} answered ${response.status}`);
    return (await response.json()) as T;
  };
  return {
    charge: (order, options) => post("/charges", { card: order.card, cents: order.cents }, options),
    email: (to, text, options) => post("/emails", { to, text }, options),
  };
}

if (import.meta.main) {
  const client = new LeaseClient({ baseUrl: process.env.FENCELEASE_URL ?? "http://127.0.0.1:8787", token: process.env.FENCELEASE_TOKEN });
  const owner = `orders-${process.pid}`;
  const handler = chargeAndEmail(servicesAt(process.env.PROVIDER_URL ?? "http://127.0.0.1:9000"));
  const worker = runWorker(client, { queue: process.env.QUEUE ?? "orders", owner, concurrency: 4, ttlMs: 30_000, onError: (error) => console.error(`${owner}: ${(error as Error).message}`) }, async (held: HeldLease<Order>) => {
    const result = await handler(held);
    console.log(`${held.job.id}: charged ${result.chargeId}, receipt ${result.messageId}`);
    return result;
  });
  console.log(`${owner} taking orders`);
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void worker.stop());
  await worker.done;
  console.log(`${owner} stopped`);
}
