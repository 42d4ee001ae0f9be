import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, test } from "vitest";
import { freshDir } from "../fresh-db.ts";

test("the Worker bundle builds offline with wrangler deploy --dry-run", async () => {
  const outdir = freshDir();
  const { stdout } = await promisify(execFile)(
    join("node_modules", ".bin", "wrangler"),
    ["deploy", "--dry-run", "--outdir", outdir],
    { env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" } },
  );
  expect(stdout).toContain("env.DB (fencelease)");
  expect(stdout).toContain("--dry-run: exiting now.");
  const bundle = join(outdir, "worker.js");
  expect(existsSync(bundle)).toBe(true);
  expect(readFileSync(bundle, "utf8")).toContain("purged"); // the scheduled handler made it in
}, 120_000);
