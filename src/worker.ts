// fencelease/worker: the service as a Cloudflare Worker (wrangler.toml's main).
// The default export serves the API and runs the cron; QueueDoorbell is the
// Durable Object where a queue's waiting claims wait in D1 mode; QueueObject
// (a queue) and Directory (where ids, queues and schedules live) are the
// Durable Objects of objects mode (STORAGE = "objects", docs/scale.md).
export { d1Driver } from "./drivers/d1.ts";
export { objectDriver } from "./drivers/durable-object-sql.ts";
export { Directory } from "./runtime/cloudflare/directory.ts";
export { QueueDoorbell } from "./runtime/cloudflare/queue-doorbell.ts";
export { QueueObject } from "./runtime/cloudflare/queue-object.ts";
export type { WorkerEnv } from "./runtime/cloudflare/env.ts";
export { default } from "./runtime/cloudflare/worker.ts";
