import type { DurableObjectNamespace } from "@cloudflare/workers-types";
import type { ObjectStorage } from "../../drivers/durable-object-sql.ts";
import { byShard, type Taken } from "./directory.ts";
import { KeyLocks } from "./key-locks.ts";

/** The other queues' objects, as one queue's object asks them to let go of an id. */
export type Releaser = (queue: string, ids: string[]) => Promise<string[]>;

// What a queue's object keeps beside the migrations' tables, for the directory:
// the ids whose rows are gone and whose unbind the directory has not yet had.
// A trigger fills it in the transaction that deletes the row (delete, purge,
// or plain SQL), so no removal is missed; a row created again here takes its id
// back out of it, the id staying bound here.
export const BINDINGS_SCHEMA = `
CREATE TABLE IF NOT EXISTS unbinds (id TEXT PRIMARY KEY, fence INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS jobs_unbind_removed AFTER DELETE ON jobs
BEGIN
  INSERT INTO unbinds (id, fence) VALUES (old.id, old.fence) ON CONFLICT (id) DO UPDATE SET fence = max(fence, excluded.fence);
END;
CREATE TRIGGER IF NOT EXISTS jobs_keep_binding AFTER INSERT ON jobs
BEGIN
  DELETE FROM unbinds WHERE id = new.id;
END;`;

/** How many pending unbinds one round of `flush` sends. */
const FLUSH_CHUNK = 1_000;

/**
 * Bindings is one queue's side of the id directory (src/runtime/cloudflare/directory.ts).
 * It keeps three rules, which together mean a job id has a row in at most one
 * queue's object, and the directory names that queue:
 *
 * 1. The object creates a row for an id only once the directory binds the id
 *    to it (or it already is: a row here, or an unbind pending here).
 * 2. It unbinds an id only after its row here is gone (the unbinds table),
 *    and only while no create of that id runs here.
 * 3. Another queue that finds the id bound here asks this object to let it go
 *    (`release`): it unbinds at once each id it has no row of, under the same locks.
 *
 * The locks are per id and in this object's memory: its creates, unbinds and
 * releases of one id run one at a time. A binding with no row (a create that
 * never came, its object restarted between the bind and the insert) is
 * harmless: the id reads as not found, and a create elsewhere releases it by
 * rule 3. A fence never repeats for an id: an unbind raises its directory
 * shard's floor to the id's fence, and a bind raises this object's fence floor
 * (migrations/0003) to its shard's before the row is created.
 */
export class Bindings {
  readonly #storage: ObjectStorage;
  readonly #directory: DurableObjectNamespace;
  readonly #queue: () => string;
  readonly #release: Releaser;
  readonly #locks = new KeyLocks();

  constructor(storage: ObjectStorage, directory: DurableObjectNamespace, queue: () => string, release: Releaser) {
    this.#storage = storage;
    this.#directory = directory;
    this.#queue = queue;
    this.#release = release;
  }

  /** hold runs `work` holding the locks of `ids`: no bind, unbind or release of them runs here meanwhile. */
  hold<T>(ids: Iterable<string>, work: () => Promise<T>): Promise<T> {
    return this.#locks.hold(ids, work);
  }

  /**
   * bind, called holding the ids' locks, binds to this queue each of `ids`
   * this object may have to create: those with no row here and no unbind
   * pending. An id bound to another queue is released there if that queue has
   * no row of it, then bound here. Answers the ids that stay bound elsewhere,
   * with their queue, and the ids it asked the directory for (the caller
   * hands those it did not create to `abandon`).
   */
  async bind(ids: string[]): Promise<{ taken: Map<string, string>; asked: string[] }> {
    const known = new Set(this.#exec("SELECT id FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) UNION SELECT id FROM unbinds WHERE id IN (SELECT value FROM json_each(?1))", JSON.stringify(ids)).map((row) => row.id as string));
    const asked = [...new Set(ids.filter((id) => !known.has(id)))];
    let taken = await this.bindInDirectory(asked);
    if (taken.size > 0) {
      // A binding elsewhere whose row is gone: that queue lets it go, then this one binds it.
      const released = (await Promise.all([...groupByQueue(taken)].map(([queue, grouped]) => this.#release(queue, grouped)))).flat();
      if (released.length > 0) {
        for (const id of released) taken.delete(id);
        taken = new Map([...taken, ...(await this.bindInDirectory(released))]);
      }
    }
    return { taken, asked };
  }

  /**
   * bindInDirectory binds `ids` to this queue in their directory shards, and
   * raises this object's fence floor to the highest floor of those shards;
   * answers the ids bound to another queue. Jobs a schedule fired here are
   * bound with it after the fact (their row exists already).
   */
  async bindInDirectory(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const answers = await Promise.all(byShard(this.#directory, ids).map(([shard, grouped]) => shard.bind(grouped, this.#queue())));
    this.#exec("UPDATE fence_floor SET fence = ?1 WHERE fence < ?1", Math.max(...answers.map((answer) => answer.floor)));
    return new Map(answers.flatMap((answer) => answer.taken as Taken[]));
  }

  /** abandon, called holding the ids' locks, queues the unbind of each of `ids` that has no row here (a bind whose create did not happen). */
  abandon(ids: string[]): void {
    if (ids.length === 0) return;
    this.#exec(
      "INSERT INTO unbinds (id, fence) SELECT value, 0 FROM json_each(?1) WHERE value NOT IN (SELECT id FROM jobs) ON CONFLICT (id) DO NOTHING",
      JSON.stringify(ids),
    );
  }

  /** Whether unbinds wait to be sent: the object's alarm comes back for them. */
  pending(): boolean {
    return this.#exec("SELECT 1 FROM unbinds LIMIT 1").length > 0;
  }

  /**
   * flush sends the pending unbinds to the directory, each chunk holding its
   * ids' locks; a chunk whose sending fails stays pending for the next flush
   * (an unbind sent twice changes nothing).
   */
  async flush(): Promise<void> {
    for (;;) {
      const ids = this.#exec("SELECT id FROM unbinds LIMIT ?1", FLUSH_CHUNK).map((row) => row.id as string);
      if (ids.length === 0) return;
      await this.hold(ids, async () => {
        // Read again under the locks: a create since may have taken an id back.
        const pending = this.#exec("SELECT id, fence FROM unbinds WHERE id IN (SELECT value FROM json_each(?1))", JSON.stringify(ids));
        await this.#unbind(pending.map((row) => ({ id: row.id as string, fence: row.fence as number })));
        this.#exec("DELETE FROM unbinds WHERE id IN (SELECT value FROM json_each(?1))", JSON.stringify(ids));
      });
      if (ids.length < FLUSH_CHUNK) return;
    }
  }

  /**
   * release (rule 3) unbinds now each of `ids` that has no row here, and
   * answers them; an id with a row here stays bound here. Its fence for the
   * directory is this object's fence floor, at least the last fence of any
   * row removed here.
   */
  release(ids: string[]): Promise<string[]> {
    return this.hold(ids, async () => {
      const absent = this.#exec("SELECT value AS id FROM json_each(?1) WHERE value NOT IN (SELECT id FROM jobs)", JSON.stringify(ids)).map((row) => row.id as string);
      const [{ fence }] = this.#exec("SELECT fence FROM fence_floor") as [{ fence: number }];
      await this.#unbind(absent.map((id) => ({ id, fence })));
      this.#exec("DELETE FROM unbinds WHERE id IN (SELECT value FROM json_each(?1))", JSON.stringify(absent));
      return absent;
    });
  }

  async #unbind(ids: { id: string; fence: number }[]): Promise<void> {
    const fences = new Map(ids.map(({ id, fence }) => [id, fence]));
    await Promise.all(byShard(this.#directory, fences.keys()).map(([shard, grouped]) => shard.unbind(grouped.map((id) => ({ id, fence: fences.get(id)! })), this.#queue())));
  }

  #exec(sql: string, ...args: unknown[]) {
    return this.#storage.sql.exec(sql, ...args).toArray();
  }
}

/** Ids grouped by the queue they are bound to. */
function groupByQueue(bound: Map<string, string>): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const [id, queue] of bound) {
    if (!groups.has(queue)) groups.set(queue, []);
    groups.get(queue)!.push(id);
  }
  return groups;
}
