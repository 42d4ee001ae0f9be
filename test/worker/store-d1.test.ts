import { everyContract } from "../contract/every-contract.ts";
import { freshD1Store } from "./fresh-d1.ts";

// The same contract as libSQL's (test/store/store.test.ts), on D1 in the Workers runtime.
everyContract(freshD1Store);
