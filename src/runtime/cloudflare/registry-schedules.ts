import type { DurableObjectNamespace } from "@cloudflare/workers-types";
import type { ScheduleNames } from "../../http/schedules.ts";
import { ScheduleNameTaken } from "../../store/errors.ts";
import { registry } from "./directory.ts";
import { KeyLocks } from "./key-locks.ts";

/** What one queue's object gives registrySchedules: its queue, and how to delete a schedule here (its own store) and in another queue's object. */
export type ScheduleHomes = {
  queue: () => string;
  deleteHere: (name: string) => Promise<void>;
  deleteAt: (queue: string, name: string) => Promise<void>;
};

/**
 * The schedule names of objects mode, for one queue's object: each object
 * keeps its own schedules, and the registry (the Directory named `queues`)
 * holds every name with its queue, one namespace for the whole deployment.
 *
 * - A put holds the name in the registry before it writes (holdSchedule,
 *   one transaction there): of two puts of a new name into two queues at
 *   once, the first holds it and the other meets it as a name taken, which
 *   the app refuses as it does everywhere (needScheduleName).
 * - A put that fails lets go of a name it had just taken.
 * - A move (a put of a name another queue holds, which the token may manage
 *   there too): the registry moves the name here if it is still there, then
 *   the schedule is deleted there; if another call moved the name meanwhile,
 *   this put is undone and refused (ScheduleNameTaken: 409, nothing changed).
 * - A delete lets the name go once the schedule is deleted.
 * Puts and deletes of one name run one at a time in this object, so a name it
 * lets go of is never one that another of its calls has just written.
 *
 * Failure modes: the object failing between the hold and the write leaves the
 * name held by a queue without that schedule: a GET answers 404, and only a
 * put into that queue (or a move by an admin of it) takes the name again. A
 * move whose delete in the old queue fails leaves the old schedule firing
 * there, unlisted; it is logged.
 */
export function registrySchedules(directory: DurableObjectNamespace, homes: ScheduleHomes): ScheduleNames {
  const locks = new KeyLocks();
  return {
    put: (name, queue, write) =>
      locks.hold([name], async () => {
        const holder = await registry(directory).holdSchedule(name, queue);
        let written;
        try {
          written = await write(holder);
        } catch (error) {
          if (holder === null) await registry(directory).forgetSchedule(name, queue);
          throw error;
        }
        if (holder === null || holder === queue) return written;
        if (!(await registry(directory).moveSchedule(name, holder, queue))) {
          await homes.deleteHere(name);
          throw new ScheduleNameTaken(name);
        }
        await homes.deleteAt(holder, name).catch((error: unknown) => {
          console.error(`fencelease: schedule ${JSON.stringify(name)} moved to queue ${JSON.stringify(queue)}, but deleting it from ${JSON.stringify(holder)} failed`, error);
        });
        return written;
      }),
    delete: (name, remove) =>
      locks.hold([name], async () => {
        await remove();
        await registry(directory).forgetSchedule(name, homes.queue());
      }),
  };
}
