import { dedupContract } from "../../contract/dedup.contract.ts";
import { env, runInDurableObject } from "cloudflare:test";
import { objectDriver } from "../../../src/drivers/durable-object-sql.ts";
import type { Driver, Row, Statement } from "../../../src/drivers/driver.ts";
import { MIGRATIONS } from "../../../src/runtime/cloudflare/migrations.ts";
import { migrate } from "../../../src/store/migrate.ts";
import { LeaseStore } from "../../../src/store/store.ts";
import { cancelContract } from "../../contract/cancel.contract.ts";
import { clockStepContract } from "../../contract/clock-step.contract.ts";
import { keyReadsContract } from "../../contract/key-reads.contract.ts";
import { stepsContract } from "../../contract/steps.contract.ts";
import { lifecycleContract } from "../../contract/lifecycle.contract.ts";
import { manyContract } from "../../contract/many.contract.ts";
import { queuesContract } from "../../contract/queues.contract.ts";
import { rateLimitContract } from "../../contract/rate-limit.contract.ts";
import { schedulesContract } from "../../contract/schedules.contract.ts";
import { jsonDepthContract } from "../../contract/json-depth.contract.ts";
import { keysContract } from "../../contract/keys.contract.ts";
import { type FreshStorage, storageContract } from "../../contract/storage.contract.ts";
import { searchContract } from "../../contract/search.contract.ts";
import { seriesContract } from "../../contract/series.contract.ts";
import { storeContract } from "../../contract/store.contract.ts";
import { traceContract } from "../../contract/trace.contract.ts";

/**
 * A driver whose every call runs inside the object, through runInDurableObject,
 * on the object's own storage: the store runs where a queue's object runs it.
 */
function insideObject(stub: DurableObjectStub): Driver {
  const inside = <T>(work: (driver: Driver) => Promise<T>) => runInDurableObject(stub, (_object, state) => work(objectDriver(state.storage as never)));
  return {
    run: (statement: Statement) => inside((driver) => driver.run(statement)),
    batch: (statements: Statement[]) => inside((driver) => driver.batch(statements)),
    close() {},
  };
}

/**
 * A store in a fresh queue's object (QueueObject), its SQLite built from the
 * migrations/ files as the object's first call builds it, and a way to look
 * at its rows.
 */
async function freshObjectStore(): Promise<FreshStorage> {
  const stub = env.QUEUES!.get(env.QUEUES!.newUniqueId()) as unknown as DurableObjectStub;
  await runInDurableObject(stub, (_object, state) => migrate(objectDriver(state.storage as never), MIGRATIONS));
  const driver = insideObject(stub);
  return {
    store: new LeaseStore(driver),
    async snapshot() {
      const rows = await driver.run({ sql: "SELECT * FROM jobs ORDER BY id", args: [] });
      return Object.fromEntries(rows.map((row) => [row.id as string, row]));
    },
    async reopen(options = {}) {
      return new LeaseStore(driver, options);
    },
    async exec(sql) {
      await driver.run({ sql, args: [] });
    },
    async rows(sql, args = []) {
      return (await driver.run({ sql, args })) as Row[];
    },
  };
}

// The contract of libSQL (test/store/store.test.ts) and D1 (test/worker/store-d1.test.ts), inside a queue's Durable Object.
storeContract(freshObjectStore);
lifecycleContract(freshObjectStore);
manyContract(freshObjectStore);
rateLimitContract(freshObjectStore);
queuesContract(freshObjectStore);
keysContract(freshObjectStore);
schedulesContract(freshObjectStore);
cancelContract(freshObjectStore);
storageContract(freshObjectStore);
jsonDepthContract(freshObjectStore);
traceContract(freshObjectStore);
clockStepContract(freshObjectStore);
keyReadsContract(freshObjectStore);
dedupContract(freshObjectStore);
stepsContract(freshObjectStore);
searchContract(freshObjectStore);
seriesContract(freshObjectStore);
