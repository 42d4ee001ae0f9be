// `npm run migrate`: brings the database at DATABASE_URL (default the embedded
// file) up to date with migrations/, e.g. a Turso database before the Worker
// uses it. D1 is migrated by `wrangler d1 migrations apply` from the same folder.
import { connect } from "./open.ts";
import { migrate } from "./migrate.ts";
import { readMigrations } from "./migrations-dir.ts";

const url = process.env.DATABASE_URL ?? "file:./data/fencelease.db";
const client = await connect(url, { authToken: process.env.DATABASE_AUTH_TOKEN });
try {
  const applied = await migrate(client, await readMigrations());
  console.log(applied.length === 0 ? `${url}: up to date` : `${url}: applied ${applied.join(", ")}`);
} catch (error) {
  console.error(`fencelease: migration failed: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  client.close();
}
