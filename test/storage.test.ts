import { storageContract } from "./contract/storage.contract.ts";
import { freshStore } from "./fresh-db.ts";

// What the store keeps, and what it costs to keep, on libSQL over a real file;
// the same suite runs on D1 in test/worker/store-d1.test.ts.
storageContract(freshStore);
