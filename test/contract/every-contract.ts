import { cancelContract } from "./cancel.contract.ts";
import { dedupContract } from "./dedup.contract.ts";
import { jsonDepthContract } from "./json-depth.contract.ts";
import { keyReadsContract } from "./key-reads.contract.ts";
import { keysContract } from "./keys.contract.ts";
import { clockStepContract } from "./clock-step.contract.ts";
import { lifecycleContract } from "./lifecycle.contract.ts";
import { manyContract } from "./many.contract.ts";
import { pushContract } from "./push.contract.ts";
import { queuesContract } from "./queues.contract.ts";
import { rateLimitContract } from "./rate-limit.contract.ts";
import { schedulesContract } from "./schedules.contract.ts";
import { searchContract } from "./search.contract.ts";
import { seriesContract } from "./series.contract.ts";
import { type FreshStorage, storageContract } from "./storage.contract.ts";
import { stepsContract } from "./steps.contract.ts";
import { storeContract } from "./store.contract.ts";
import { tokensContract } from "./tokens.contract.ts";
import { traceContract } from "./trace.contract.ts";

/** Every contract suite, on a storage that `freshStore` gives fresh to each test: what a storage passes before it is used. */
export function everyContract(freshStore: () => Promise<FreshStorage>): void {
  storeContract(freshStore);
  lifecycleContract(freshStore);
  manyContract(freshStore);
  rateLimitContract(freshStore);
  queuesContract(freshStore);
  keysContract(freshStore);
  pushContract(freshStore);
  schedulesContract(freshStore);
  cancelContract(freshStore);
  tokensContract(freshStore);
  traceContract(freshStore);
  clockStepContract(freshStore);
  storageContract(freshStore);
  jsonDepthContract(freshStore);
  keyReadsContract(freshStore);
  dedupContract(freshStore);
  stepsContract(freshStore);
  searchContract(freshStore);
  seriesContract(freshStore);
}
