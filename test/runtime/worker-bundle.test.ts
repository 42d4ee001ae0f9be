import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, test } from "vitest";
import { freshDir } from "../fresh-db.ts";

// Both wrangler configurations build offline: D1 mode (wrangler.toml) and
// objects mode (wrangler.objects.toml), each with the migrations/ files
// bundled as text for the queues' objects (docs/scale.md).
const migrations = readdirSync("migrations").filter((name) => name.endsWith(".sql"));

test.each([
  { config: "wrangler.toml", bindings: ["env.DB (fencelease)", "env.DOORBELL (QueueDoorbell)", "env.QUEUES (QueueObject)", 'env.STORAGE ("d1")'], absent: [] },
  { config: "wrangler.objects.toml", bindings: ["env.QUEUES (QueueObject)", "env.DIRECTORY (Directory)", 'env.STORAGE ("objects")'], absent: ["env.DB", "env.DOORBELL"] },
])("$config builds offline with wrangler deploy --dry-run", async ({ config, bindings, absent }) => {
  const outdir = freshDir();
  const { stdout, stderr } = await promisify(execFile)(
    join("node_modules", ".bin", "wrangler"),
    ["deploy", "--dry-run", "--outdir", outdir, "--config", config],
    { env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" } },
  );
  for (const binding of bindings) expect(stdout).toContain(binding);
  for (const binding of absent) expect(stdout).not.toContain(binding);
  expect(stderr).not.toMatch(/warn/i);
  expect(stdout).toContain("--dry-run: exiting now.");
  const bundle = join(outdir, "worker.js");
  expect(existsSync(bundle)).toBe(true);
  expect(readFileSync(bundle, "utf8")).toContain("purged"); // the scheduled handler made it in
  const modules = readdirSync(outdir);
  for (const migration of migrations) expect(modules.some((name) => name.endsWith(`-${migration}`)), migration).toBe(true);
}, 120_000);
