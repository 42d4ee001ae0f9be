// fencelease/worker: the service as a Cloudflare Worker (wrangler.toml's main).
// The default export serves the API and runs the cron; QueueDoorbell is the
// Durable Object where a queue's waiting claims wait.
export { d1Driver } from "./drivers/d1.ts";
export { QueueDoorbell } from "./runtime/cloudflare/queue-doorbell.ts";
export type { WorkerEnv } from "./runtime/cloudflare/env.ts";
export { default } from "./runtime/cloudflare/worker.ts";
