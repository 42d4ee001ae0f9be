import { env } from "cloudflare:test";
import { d1Driver } from "../../src/drivers/d1.ts";
import type { Row } from "../../src/drivers/driver.ts";
import { LeaseStore } from "../../src/store/store.ts";
import { cancelContract } from "../contract/cancel.contract.ts";
import { manyContract } from "../contract/many.contract.ts";
import { lifecycleContract } from "../contract/lifecycle.contract.ts";
import { type FreshStorage, storageContract } from "../contract/storage.contract.ts";
import { pushContract } from "../contract/push.contract.ts";
import { queuesContract } from "../contract/queues.contract.ts";
import { schedulesContract } from "../contract/schedules.contract.ts";
import { rateLimitContract } from "../contract/rate-limit.contract.ts";
import { storeContract } from "../contract/store.contract.ts";
import { tokensContract } from "../contract/tokens.contract.ts";
import { traceContract } from "../contract/trace.contract.ts";

/** A store over the D1 binding, on empty tables, with the binding itself to look at the rows. */
async function freshD1Store(): Promise<FreshStorage> {
  // Deleting jobs raises the fence floor and records nothing else; the tables they feed are emptied after them.
  const tables = ["jobs", "history", "refusal_counts", "refusal_minutes", "queue_counts", "queues", "schedules", "push_endpoints", "push_counts", "tokens"];
  await env.DB.batch([...tables.map((table) => env.DB.prepare(`DELETE FROM ${table}`)), env.DB.prepare("UPDATE fence_floor SET fence = 0")]);
  return {
    store: new LeaseStore(d1Driver(env.DB)),
    async snapshot() {
      const { results } = await env.DB.prepare("SELECT * FROM jobs ORDER BY id").all<Row>();
      return Object.fromEntries(results.map((row) => [row.id as string, row]));
    },
    async reopen(options = {}) {
      return new LeaseStore(d1Driver(env.DB), options);
    },
    async exec(sql) {
      await env.DB.prepare(sql).run();
    },
    async rows(sql, args = []) {
      return (await env.DB.prepare(sql).bind(...args).all<Row>()).results;
    },
  };
}

// The same contract as libSQL's (test/store/store.test.ts), on D1 in the Workers runtime.
storeContract(freshD1Store);
lifecycleContract(freshD1Store);
manyContract(freshD1Store);
rateLimitContract(freshD1Store);
queuesContract(freshD1Store);
pushContract(freshD1Store);
schedulesContract(freshD1Store);
cancelContract(freshD1Store);
tokensContract(freshD1Store);
traceContract(freshD1Store);
storageContract(freshD1Store);
