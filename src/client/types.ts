import type { z } from "@hono/zod-openapi";
import type * as schema from "../http/schemas.ts";

// The client's request and response types, taken from the schemas that the
// server validates with, so that the two cannot drift apart.

/** A job as the API shows it. */
export type Job = z.infer<typeof schema.JobSchema>;
/** A lease: its fence, its expiry and the job it holds. */
export type Lease = z.infer<typeof schema.LeaseSchema>;
/** The body of `POST /v1/jobs`. */
export type EnqueueRequest = z.input<typeof schema.EnqueueBody>;
/** The body of `POST /v1/jobs/:id/claim`. */
export type ClaimRequest = z.input<ReturnType<typeof schema.ClaimBody>>;
/** The body of `POST /v1/queues/:queue/claim`. */
export type ClaimNextRequest = z.input<ReturnType<typeof schema.ClaimNextBody>>;
/** The body of `POST /v1/jobs/:id/renew`. */
export type RenewRequest = z.input<ReturnType<typeof schema.RenewBody>>;
/** The body of `POST /v1/jobs/:id/complete`. */
export type CompleteRequest = z.input<typeof schema.CompleteBody>;
/** The body of `POST /v1/jobs/:id/release`. */
export type ReleaseRequest = z.input<typeof schema.ReleaseBody>;
