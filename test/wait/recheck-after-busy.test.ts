import Database from "libsql";
import { expect, onTestFinished, test } from "vitest";
import { libsqlFileDriver } from "../../src/drivers/libsql-file.ts";
import { LeaseStore } from "../../src/store/store.ts";
import { noteVerbs } from "../../src/store/note.ts";
import { localWaits } from "../../src/wait/long-poll.ts";
import { WaitRoom } from "../../src/wait/wait-room.ts";
import { freshStore } from "../fresh-db.ts";

// The re-check trusts data_version, which counts per connection: a write of
// this process that waited for another's lock must not change connection.
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("a job another process commits while this process's write waited for its lock still wakes a waiting claim within the re-check", async () => {
  const fresh = await freshStore();
  const path = fresh.url.slice("file:".length);
  const store = new LeaseStore(libsqlFileDriver(path));
  onTestFinished(() => store.close());
  const room = new WaitRoom({ recheckMs: 100 });
  const waits = localWaits(store, room, Date.now);
  const stop = new AbortController();
  onTestFinished(() => (stop.abort(), room.stop()));
  const claimed = waits.claimNext({ queue: "q", owner: "w", ttlMs: 60_000, limit: 1, waitMs: 8_000 }, stop.signal);
  await sleep(500); // a few re-checks: the version is known

  // Another process takes the write lock and enqueues a job of q by plain SQL.
  const other = new Database(path);
  onTestFinished(() => {
    other.close();
  });
  other.exec("BEGIN IMMEDIATE");
  const now = Date.now();
  other.exec(`INSERT INTO jobs (id, queue, run_at, created_at, updated_at) VALUES ('theirs', 'q', ${now}, ${now}, ${now})`);
  // Meanwhile this process writes (to another queue) and meets SQLITE_BUSY.
  const mine = noteVerbs(store).enqueue("mine", { queue: "elsewhere" });
  await sleep(300);
  other.exec("COMMIT");
  const committedAt = performance.now();
  expect(await mine).toBe(true);

  const { leases } = await claimed;
  expect(leases.map((lease) => lease.job.id)).toEqual(["theirs"]);
  expect(performance.now() - committedAt).toBeLessThan(1_000); // the re-check (100 ms), not the claim's 8 s
}, 20_000);
