import type { D1Migration } from "cloudflare:test";
import type { WorkerEnv } from "../../src/worker.ts";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      DB: D1Database;
      DB_UNMIGRATED: D1Database;
      TEST_MIGRATIONS: D1Migration[];
      /** Three earlier mains' migrations/ folders (test/fixtures/earlier-mains.ts), each with the D1 binding to build it in. */
      EARLIER_MAINS: { commit: string; binding: string; migrations: D1Migration[] }[];
      /** Set (1, or quick) to run test/worker/objects/bench.test.ts. */
      BENCH: string;
    }
  }
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The base URL of the Node endpoint that test/push/worker-endpoint.setup.ts starts for the push tests. */
    pushEndpoint: string;
  }
}
