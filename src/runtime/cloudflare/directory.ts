import { DurableObject } from "cloudflare:workers";
import type { DurableObjectNamespace, DurableObjectState, DurableObjectStub } from "@cloudflare/workers-types";
import { metered, objectDriver, type RowMeter } from "../../drivers/durable-object-sql.ts";
import type { Driver, Row, Statement } from "../../drivers/driver.ts";
import * as tokenSql from "../../store/sql/tokens.ts";
import { MIGRATIONS } from "./migrations.ts";

/**
 * How many objects the id directory is spread over. An id's shard is a hash
 * of the id, so this number can never change once a deployment has bound ids:
 * each shard takes about 1,000 requests a second, so 16 take about 16,000
 * enqueues a second (a by-id call the Worker has seen before costs none).
 */
export const DIRECTORY_SHARDS = 16;

/** The name of the directory object that keeps the list of queues and where each schedule lives. */
export const REGISTRY = "queues";

/** An id bound to another queue than the one asking, with that queue. */
export type Taken = [id: string, queue: string];

// Every instance has every table; a shard uses `ids` and `floor`, the registry `queues`, `schedules` and `tokens`
// (whose table is migrations/0030's, made below if missing).
const SCHEMA = `
CREATE TABLE IF NOT EXISTS ids (id TEXT PRIMARY KEY, queue TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS floor (one INTEGER PRIMARY KEY CHECK (one = 1), fence INTEGER NOT NULL);
INSERT INTO floor (one, fence) VALUES (1, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS queues (queue TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS schedules (name TEXT PRIMARY KEY, queue TEXT NOT NULL) WITHOUT ROWID;`;

/**
 * Directory is where things live in objects mode (docs/scale.md): which
 * queue's object holds each job id (sharded by id over DIRECTORY_SHARDS
 * objects), and, in the one object named REGISTRY, the queues that exist and
 * the queue of each schedule.
 *
 * An id is bound to one queue at a time: a queue's object binds an id before
 * it creates its row (and answers the other queue when the id is taken), and
 * unbinds it after its row is gone; src/runtime/cloudflare/bindings.ts keeps
 * that protocol. Each shard keeps a fence floor, the highest fence of any id
 * unbound from it: an id bound again, in any queue, starts above every fence
 * it had, so a fence never repeats for an id.
 *
 * Methods are called by RPC from the Worker and the queues' objects; each is
 * one transaction of this object's SQLite.
 */
export class Directory extends DurableObject<unknown> {
  readonly #driver: Driver;
  readonly #meter: RowMeter & { instance: string; requests: number } = { instance: crypto.randomUUID(), requests: 0, rowsRead: 0, rowsWritten: 0 };

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx as never, env);
    const storage = metered(ctx.storage, this.#meter);
    storage.sql.exec(SCHEMA).toArray();
    if (storage.sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'tokens'").toArray().length === 0) storage.sql.exec(TOKENS_TABLE).toArray();
    this.#driver = objectDriver(storage);
  }

  /** meter (for the cost tests and the bench; not counted) answers the requests this object served (each RPC call is one, as billed) and the rows it read and wrote since it started (`instance`: which start). */
  async meter(): Promise<RowMeter & { instance: string; requests: number }> {
    return { ...this.#meter };
  }

  /**
   * bind binds to `queue` each of `ids` that is unbound, and answers the ids
   * bound to another queue (with it), and the shard's fence floor, which a new
   * row must start at or above.
   */
  async bind(ids: string[], queue: string): Promise<{ taken: Taken[]; floor: number }> {
    this.#meter.requests++;
    const [, taken, [floor] = []] = await this.#driver.batch([
      { sql: "INSERT INTO ids (id, queue) SELECT value, ?2 FROM json_each(?1) WHERE true ON CONFLICT (id) DO NOTHING", args: [JSON.stringify(ids), queue] },
      { sql: "SELECT id, queue FROM ids WHERE id IN (SELECT value FROM json_each(?1)) AND queue <> ?2", args: [JSON.stringify(ids), queue] },
      { sql: "SELECT fence FROM floor", args: [] },
    ]);
    return { taken: taken!.map((row) => [row.id as string, row.queue as string]), floor: floor!.fence as number };
  }

  /** unbind unbinds each of `ids` still bound to `queue`, and raises the floor to the highest of their fences. */
  async unbind(ids: { id: string; fence: number }[], queue: string): Promise<void> {
    this.#meter.requests++;
    if (ids.length === 0) return;
    await this.#driver.batch([
      { sql: "DELETE FROM ids WHERE id IN (SELECT json_extract(value, '$.id') FROM json_each(?1)) AND queue = ?2", args: [JSON.stringify(ids), queue] },
      { sql: "UPDATE floor SET fence = ?1 WHERE fence < ?1", args: [Math.max(...ids.map(({ fence }) => fence))] },
    ]);
  }

  /** locate answers the queue each of `ids` is bound to; an unbound id is left out. */
  async locate(ids: string[]): Promise<Taken[]> {
    this.#meter.requests++;
    const rows = await this.#driver.run({ sql: "SELECT id, queue FROM ids WHERE id IN (SELECT value FROM json_each(?1))", args: [JSON.stringify(ids)] });
    return rows.map((row) => [row.id as string, row.queue as string]);
  }

  /** addQueue records that `queue` has an object with something in it (the registry). */
  async addQueue(queue: string): Promise<void> {
    this.#meter.requests++;
    await this.#driver.run({ sql: "INSERT INTO queues (queue) VALUES (?1) ON CONFLICT DO NOTHING", args: [queue] });
  }

  /** hasQueue answers whether `queue` is recorded (the registry). */
  async hasQueue(queue: string): Promise<boolean> {
    this.#meter.requests++;
    return (await this.#driver.run({ sql: "SELECT 1 FROM queues WHERE queue = ?1", args: [queue] })).length === 1;
  }

  /** removeQueue forgets `queue`, whose object holds nothing any more (the registry). */
  async removeQueue(queue: string): Promise<void> {
    this.#meter.requests++;
    await this.#driver.run({ sql: "DELETE FROM queues WHERE queue = ?1", args: [queue] });
  }

  /** queues answers every queue recorded, by name (the registry). */
  async queues(): Promise<string[]> {
    this.#meter.requests++;
    return (await this.#driver.run({ sql: "SELECT queue FROM queues ORDER BY queue", args: [] })).map((row) => row.queue as string);
  }

  /**
   * holdSchedule holds schedule name `name` for `queue` if no queue holds it;
   * answers the queue that held it before (null: none, and `queue` holds it
   * now), which it leaves as it is (the registry).
   */
  async holdSchedule(name: string, queue: string): Promise<string | null> {
    this.#meter.requests++;
    const [[before] = []] = (await this.#driver.batch([
      { sql: "SELECT queue FROM schedules WHERE name = ?1", args: [name] },
      { sql: "INSERT INTO schedules (name, queue) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING", args: [name, queue] },
    ])) as [{ queue: string }[]];
    return before?.queue ?? null;
  }

  /** moveSchedule records that schedule `name` lives in `to` if it still lives in `from`; answers whether it did (the registry). */
  async moveSchedule(name: string, from: string, to: string): Promise<boolean> {
    this.#meter.requests++;
    const moved = await this.#driver.run({ sql: "UPDATE schedules SET queue = ?3 WHERE name = ?1 AND queue = ?2 RETURNING name", args: [name, from, to] });
    return moved.length === 1;
  }

  /** scheduleQueue answers the queue schedule `name` lives in, or null (the registry). */
  async scheduleQueue(name: string): Promise<string | null> {
    this.#meter.requests++;
    const [row] = await this.#driver.run({ sql: "SELECT queue FROM schedules WHERE name = ?1", args: [name] });
    return (row?.queue as string | undefined) ?? null;
  }

  /** forgetSchedule forgets schedule `name` if it still lives in `queue` (the registry). */
  async forgetSchedule(name: string, queue: string): Promise<void> {
    this.#meter.requests++;
    await this.#driver.run({ sql: "DELETE FROM schedules WHERE name = ?1 AND queue = ?2", args: [name, queue] });
  }

  /**
   * tokens runs statements of src/store/sql/tokens.ts, and only those, in one
   * transaction (the registry): objects mode keeps its API tokens here, one
   * place for every queue (registryTokens makes them and checks them; only
   * the SHA-256 of a secret is stored).
   */
  async tokens(statements: Statement[]): Promise<Row[][]> {
    this.#meter.requests++;
    const foreign = statements.find((statement) => !TOKEN_STATEMENTS.has(statement.sql));
    if (foreign) throw new Error(`the registry runs only the statements of src/store/sql/tokens.ts, not ${foreign.sql.slice(0, 60)}`);
    return this.#driver.batch(statements);
  }

  /** scheduleQueues answers each queue that holds a schedule, by name (the registry). */
  async scheduleQueues(): Promise<string[]> {
    this.#meter.requests++;
    return (await this.#driver.run({ sql: "SELECT DISTINCT queue FROM schedules ORDER BY queue", args: [] })).map((row) => row.queue as string);
  }
}

/** The tokens table of migrations/0030, for the registry. */
const TOKENS_TABLE = MIGRATIONS.find((migration) => migration.name === "0030_tokens.sql")!.sql;

/** The SQL of each statement of src/store/sql/tokens.ts (their text does not depend on their arguments). */
const TOKEN_STATEMENTS = new Set([
  tokenSql.insertToken({ id: "", hash: "", role: "", queues: "", name: null, createdAt: 0 }).sql,
  tokenSql.tokenByHash("").sql,
  tokenSql.listTokens().sql,
  tokenSql.deleteToken("").sql,
]);

/** The shard of the id directory that holds `id`: FNV-1a of its UTF-16 code units, modulo DIRECTORY_SHARDS. */
export function shardOf(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193) >>> 0;
  return hash % DIRECTORY_SHARDS;
}

/** The directory objects, as the Worker and the queues' objects call them. */
export type DirectoryStub = DurableObjectStub<Directory>;

/** The namespace of the DIRECTORY binding, typed (env.ts leaves it untyped, so that it imports no object's class). */
function typed(namespace: DurableObjectNamespace): DurableObjectNamespace<Directory> {
  return namespace as unknown as DurableObjectNamespace<Directory>;
}

/** The directory shard of each id: the ids grouped by the stub that holds them. */
export function byShard(directory: DurableObjectNamespace, ids: Iterable<string>): [DirectoryStub, string[]][] {
  const namespace = typed(directory);
  const groups = new Map<number, string[]>();
  for (const id of ids) {
    const shard = shardOf(id);
    if (!groups.has(shard)) groups.set(shard, []);
    groups.get(shard)!.push(id);
  }
  return [...groups].map(([shard, grouped]) => [namespace.get(namespace.idFromName(`ids/${shard}`)), grouped]);
}

/** The registry: the directory object that lists the queues and where each schedule lives. */
export function registry(directory: DurableObjectNamespace): DirectoryStub {
  const namespace = typed(directory);
  return namespace.get(namespace.idFromName(REGISTRY));
}
