import type { KeyPage } from "../client/types.ts";
import { type Command, columns, more } from "./command.ts";
import { integer } from "./flags.ts";

// The command about a queue's keys (docs/queues.md#keys): which have open
// jobs, how many each has waiting and leased, and why one holds jobs back.

/** A key as cells: the key, its waiting jobs, its leases, and why it holds jobs back. */
const keyCells = ({ key, waiting, leased, heldBack }: KeyPage["keys"][number]) => [key, `waiting ${waiting}`, `leased ${leased}`, heldBack ?? ""];

/** keys. */
export const KEY_COMMANDS: Record<string, Command> = {
  keys: {
    argument: "a queue",
    async run({ arg: queue, flags, client }) {
      const page = await client.queues.keys(queue, { limit: integer(flags, "limit"), cursor: flags.cursor });
      return { json: page, text: (page.keys.length === 0 ? `no keys with open jobs in ${queue}` : columns(page.keys.map(keyCells))) + more(page.nextCursor) };
    },
  },
};
