// A handler that charges a card once per job, however many leases the job
// goes through. A worker may stall mid-charge (a pause, a slow network) past
// its lease; the job is then claimed again, and the new lease charges again.
// The payment provider tells the two calls apart by their idempotency key, so
// that key must be the same under every lease of the job: the job's id, plus
// the name of the step when a job makes more than one charge. A key with the
// fence in it (`${job.id}:${fence}`) is a new key under each lease, and the
// provider charges each one.
//
// The fence is for what keeps the highest fence it has seen and refuses a
// lower one: fencelease's own complete (the stalled worker's is refused), or a
// table of yours written with fencedWrite (docs/client.md).
//
// Use it with runWorker (or withLease) and your provider's charge call:
//
//   const worker = runWorker(client, { queue: "invoices", owner: "billing-1", concurrency: 8, ttlMs: 30_000 },
//     chargeInvoice((invoice, options) => stripe.paymentIntents.create({ ... }, options)));
//
// test/runtime/examples.test.ts runs it against a provider that honours its
// keys, with a worker that stalls mid-charge past its lease.
import type { HeldLease } from "fencelease/client";

/** What an invoice job carries. */
export type Invoice = { card: string; cents: number };

/** A payment provider's charge: a second call with the same idempotency key makes no charge and answers the first one's. */
export type ChargeCard = (invoice: Invoice, options: { idempotencyKey: string; signal: AbortSignal }) => Promise<{ chargeId: string }>;

/** The key of the one charge of job `id`: its id and the step's name, the same under every lease. */
export const chargeKey = (id: string) => `${id}/charge`;

/** The handler of a queue of invoices: charges each once, through `chargeCard`, and answers the charge's id as the job's result. */
export function chargeInvoice(chargeCard: ChargeCard) {
  return async ({ job, signal }: HeldLease<Invoice>): Promise<{ chargeId: string }> => {
    const { chargeId } = await chargeCard(job.payload, { idempotencyKey: chargeKey(job.id), signal });
    return { chargeId };
  };
}
