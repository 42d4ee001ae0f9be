import { describe, expectTypeOf, test } from "vitest";
import { type HeldLease, type Job, type JobHandler, type Lease, LeaseClient, runWorker, withLease } from "../../src/client/index.ts";

// Type-level: these assertions are checked by `tsc --noEmit` (npm test runs it
// before vitest), and each `@ts-expect-error` fails the check if the line it
// marks ever compiles. At run time nothing here is sent: the calls sit in
// functions that are never called.

type Mail = { to: string; subject: string };
const client = new LeaseClient({ baseUrl: "http://fencelease.test" });
const options = { queue: "mail", owner: "w", concurrency: 1, ttlMs: 1_000 };
const leaseOptions = { owner: "w", ttlMs: 1_000 };

describe("the client's types", () => {
  test("runWorker takes the payload's type as given, and the handler's job carries it", () => {
    void (() =>
      runWorker<Mail>(client, options, async ({ job }) => {
        expectTypeOf(job.payload).toEqualTypeOf<Mail>();
        expectTypeOf(job).toEqualTypeOf<Job<Mail>>();
        // @ts-expect-error: a Mail has no `from`
        return job.payload.from;
      }));
  });

  test("runWorker infers the payload and the result from a typed handler", () => {
    const send = async ({ job }: HeldLease<Mail>) => ({ sent: job.payload.to });
    expectTypeOf(runWorker<Mail, { sent: string }>).parameter(2).toEqualTypeOf<JobHandler<Mail, { sent: string }>>();
    expectTypeOf(send).toExtend<JobHandler<Mail, { sent: string }>>();
    void (() => runWorker(client, options, send));
    // @ts-expect-error: a handler of Mail is not a handler of numbers
    void (() => runWorker<number>(client, options, send));
  });

  test("without a type, the payload is unknown and must be narrowed", () => {
    void (() =>
      runWorker(client, options, async ({ job }) => {
        expectTypeOf(job.payload).toBeUnknown();
        // @ts-expect-error: unknown has no fields until it is narrowed
        return job.payload.to;
      }));
  });

  test("withLease infers the payload from its fn, and answers the job with fn's result type", () => {
    void (async () => {
      const done = await withLease(client, "job-1", async ({ job }: HeldLease<Mail>) => ({ sent: job.payload.to }), leaseOptions);
      expectTypeOf(done).toEqualTypeOf<Job<Mail, { sent: string }> | null>();
      expectTypeOf(done!.result).toEqualTypeOf<{ sent: string } | null>();
      const given = await withLease<Mail>(client, { queue: "mail" }, async ({ job }) => job.payload.subject.length, leaseOptions);
      expectTypeOf(given!.payload).toEqualTypeOf<Mail>();
      const untyped = await withLease(client, "job-1", async () => 42, leaseOptions);
      expectTypeOf(untyped!.payload).toBeUnknown();
      expectTypeOf(untyped!.result).toEqualTypeOf<number | null>();
    });
  });

  test("the claim calls and the reads take the payload's type, default unknown", () => {
    void (async () => {
      expectTypeOf(await client.claim<Mail>("job-1", leaseOptions)).toEqualTypeOf<Lease<Mail>>();
      expectTypeOf((await client.claim("job-1", leaseOptions)).job.payload).toBeUnknown();
      const claimed = await client.claimNext<Mail>("mail", leaseOptions);
      expectTypeOf(claimed[0]!.job.payload).toEqualTypeOf<Mail>();
      expectTypeOf(claimed.retryAfterMs).toEqualTypeOf<number | undefined>();
      const answer = await client.claimNextAnswer<Mail>("mail", leaseOptions);
      expectTypeOf(answer.leases).toEqualTypeOf<Lease<Mail>[]>();
      expectTypeOf(answer.waitedMs).toEqualTypeOf<number | undefined>();
      expectTypeOf(await client.get<Mail, { sent: string }>("job-1")).toEqualTypeOf<Job<Mail, { sent: string }>>();
      expectTypeOf((await client.waitFor<Mail, { sent: string }>("job-1")).result).toEqualTypeOf<{ sent: string } | null>();
      expectTypeOf((await client.get("job-1")).payload).toBeUnknown();
    });
  });

  test("a Job of unknown is the job as the server shows it: every field there, typed", () => {
    expectTypeOf<Job>().toHaveProperty("fence").toEqualTypeOf<number>();
    expectTypeOf<Job>().toHaveProperty("status").toEqualTypeOf<"queued" | "scheduled" | "leased" | "done" | "dead" | "cancelled">();
    expectTypeOf<Job<Mail>>().toExtend<Job>();
  });
});
