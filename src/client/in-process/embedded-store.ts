import type { PushEndpoints } from "../../store/push.ts";
import type { Queues } from "../../store/queues.ts";
import type { Schedules } from "../../store/schedules.ts";
import type { LeaseStore } from "../../store/store.ts";
import type { Tokens } from "../../store/tokens.ts";
import type { WaitingStore } from "../../wait/long-poll.ts";

/**
 * The store a LeaseClient calls in the same process: a LeaseStore (openStore
 * of fencelease/node, or `new LeaseStore(driver)` anywhere) is one. Only its
 * type is named here: the client calls these verbs of the object it is given
 * and loads none of the store's code, so fencelease/client stays fit for a
 * browser or a Worker.
 */
export type EmbeddedStore = WaitingStore &
  Pick<LeaseStore, "enqueue" | "enqueueMany" | "list" | "bulk" | "events" | "retry" | "cancel" | "delete" | "claim" | "renew" | "step" | "complete" | "fail" | "renewMany" | "completeMany" | "leaseCheck" | "stats"> & {
    readonly queues: Pick<Queues, "pause" | "resume" | "set" | "get" | "list" | "keys" | "series">;
    readonly schedules: Pick<Schedules, "put" | "get" | "list" | "delete">;
    readonly push: Pick<PushEndpoints, "put" | "rotate" | "get" | "list" | "delete">;
    readonly tokens: Pick<Tokens, "create" | "list" | "revoke">;
  };
