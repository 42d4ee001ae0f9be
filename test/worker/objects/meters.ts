import { env, runInDurableObject } from "cloudflare:test";
import { DIRECTORY_SHARDS, REGISTRY } from "../../../src/runtime/cloudflare/directory.ts";
import type { Directory, QueueObject } from "../../../src/worker.ts";
import { queueObject } from "../storage-mode.ts";

// What objects mode's objects bill, read from their meters: requests (API
// requests, RPC calls, alarms) and rows written, an alarm set counted as a
// row written. Shared by the cost test and the bench.

/** What one object has billed since it started. */
export type Billed = { requests: number; rowsRead: number; rowsWritten: number };

/** Each object's start (its meter is in memory: an object evicted while idle starts again from 0) and what it billed since. */
export type Snapshot = Map<string, Billed & { instance: string }>;

/** The meters of `queues`' objects, every directory shard's and the registry's. */
export async function meters(queues: string[]): Promise<Snapshot> {
  const snapshot: Snapshot = new Map();
  for (const queue of queues) {
    const meter = await runInDurableObject(queueObject(queue), (object: QueueObject) => object.meter());
    snapshot.set(`queue ${queue}`, { instance: meter.instance, requests: meter.requests, rowsRead: meter.rowsRead, rowsWritten: meter.rowsWritten + meter.alarmsSet });
  }
  for (const name of [...Array.from({ length: DIRECTORY_SHARDS }, (_, shard) => `ids/${shard}`), REGISTRY]) {
    const stub = env.DIRECTORY!.get(env.DIRECTORY!.idFromName(name));
    const meter = await runInDurableObject(stub as never, (directory: Directory) => directory.meter());
    snapshot.set(`directory ${name}`, meter);
  }
  return snapshot;
}

/** What was billed between two snapshots; an object that started again in between counts from its new start (it billed nothing while idle). */
export function billedBetween(before: Snapshot, after: Snapshot): Billed {
  const billed = { requests: 0, rowsRead: 0, rowsWritten: 0 };
  for (const [name, now] of after) {
    const then = before.get(name);
    const from = then && then.instance === now.instance ? then : { requests: 0, rowsRead: 0, rowsWritten: 0 };
    billed.requests += now.requests - from.requests;
    billed.rowsRead += now.rowsRead - from.rowsRead;
    billed.rowsWritten += now.rowsWritten - from.rowsWritten;
  }
  return billed;
}
