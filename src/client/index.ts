// fencelease/client: what a worker calls. Runs on Workers, Node >= 20, Deno, Bun and browsers: over node:http where the runtime has it, fetch elsewhere; or in-process, over a store the caller passes (its code never loaded here).
export { claimMany } from "./claim-many.ts";
export {
  ConflictError,
  errorFromResponse,
  FenceleaseError,
  ForbiddenError,
  InvalidRequestError,
  LeaseLostError,
  NotClaimableError,
  NotFoundError,
  UnauthorizedError,
  UnavailableError,
} from "./errors.ts";
export { type FencedDatabase, fencedStatement, type FencedValue, type FencedWrite, fencedWrite } from "./fenced-write.ts";
export { LeaseClient } from "./lease-client.ts";
export { type PushCalls } from "./push.ts";
export { type QueueCalls } from "./queues.ts";
export { type ScheduleCalls } from "./schedules.ts";
export { type TokenCalls } from "./tokens.ts";
export { type EmbeddedStore, type HttpOptions, type InProcessOptions, type LeaseClientOptions } from "./lease-client.ts";
export { type RetryOptions } from "./retry.ts";
export { runWorker, type WorkerHandle } from "./runner/run-worker.ts";
export { type StepFn } from "./steps.ts";
export { traceJob } from "./tracing.ts";
export { type JobHandler, type WorkerOptions } from "./runner/worker-options.ts";
export type {
  Cancelled,
  CancelRequest,
  ClaimedLeases,
  ClaimNextAnswer,
  ClaimNextRequest,
  ClaimRequest,
  CompleteManyAnswer,
  CompleteManyRequest,
  CompleteRequest,
  Enqueued,
  EnqueueAnswer,
  PlainEnqueueRequest,
  EnqueueRequest,
  EventPage,
  EventsRequest,
  FailRequest,
  Job,
  JobEvent,
  JobPage,
  JobStatus,
  KeyPage,
  KeysRequest,
  Lease,
  LeaseCheck,
  LeaseCheckRequest,
  ListRequest,
  NewJobRequest,
  NextRequest,
  PushRequest,
  PushSettings,
  PushSettingsWithSecret,
  QueueSettings,
  QueueSettingsRequest,
  Series,
  SeriesPoint,
  SeriesRequest,
  QueueStats,
  ReleaseRequest,
  RenewManyAnswer,
  RenewManyRequest,
  RenewRequest,
  Schedule,
  ScheduleRequest,
  Settled,
  Step,
  StepAnswer,
  StepRequest,
  Token,
  TokenRequest,
  TokenSelf,
  CreatedToken,
} from "./types.ts";
export { PUSH_TOLERANCE_MS, type PushDelivery, type PushMessage, type PushRefusal, PushVerificationError, verifyPush } from "./verify-push.ts";
export { type HeldLease, withLease, type WithLeaseOptions } from "./with-lease.ts";
