import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { expect, test } from "vitest";
import { freshDir } from "../fresh-db.ts";

// The package as its users get it: built, packed, installed from the tarball
// into a new project, then type-checked with that project's own tsconfig
// (skipLibCheck left at its default, false, so every declaration file the
// entries reach is checked) and run. Nothing here reads the sources in src/.

const run = promisify(execFile);
const REPO = resolve(".");
const bin = (name: string) => join(REPO, "node_modules", ".bin", name);

/** The consumer's files: one import of each public entry, and the tsconfigs a Node, a browser and a Worker project would have. */
const FILES: Record<string, unknown> = {
  "package.json": { name: "consumer", private: true, type: "module" },
  // A Node project: TypeScript's defaults but for the module system; every installed @types package is visible.
  "tsconfig.json": { compilerOptions: { module: "nodenext", strict: true, noEmit: true }, files: ["root.ts", "node.ts", "client.ts"] },
  // A web page that calls the API: no Node types at all.
  "tsconfig.browser.json": {
    compilerOptions: { target: "es2022", module: "esnext", moduleResolution: "bundler", lib: ["es2022", "dom"], types: [], strict: true, noEmit: true },
    files: ["client.ts"],
  },
  // A Worker project, as Cloudflare's templates set one up: the Workers types and no DOM.
  "tsconfig.worker.json": {
    compilerOptions: { target: "es2022", module: "es2022", moduleResolution: "bundler", lib: ["es2022"], types: ["@cloudflare/workers-types"], strict: true, noEmit: true },
    files: ["worker.ts"],
  },
  "root.ts": `import { createApp, LeaseStore, type Job } from "fencelease";\nconst job: Job | null = null;\nexport const root = [typeof createApp, typeof LeaseStore, job];\n`,
  "node.ts": `import { openStore, serverConfigFromEnv, startServer } from "fencelease/node";\nimport { LeaseClient } from "fencelease/client";\nexport const node = [typeof openStore, typeof startServer, serverConfigFromEnv({}).port];\nexport const embedded = async () => new LeaseClient({ store: await openStore({ url: ":memory:" }) });\n`,
  "client.ts": `import { LeaseClient, LeaseLostError } from "fencelease/client";\nexport const client = [new LeaseClient({ baseUrl: "http://127.0.0.1:8787" }), typeof LeaseLostError];\n`,
  "worker.ts": `import worker, { d1Driver, QueueDoorbell, type WorkerEnv } from "fencelease/worker";\nconst env: WorkerEnv = {};\nexport { QueueDoorbell };\nexport const uses = [typeof d1Driver, env];\nexport default worker;\n`,
  "main.js": [
    'import { createApp } from "fencelease";',
    'import { openStore, serverConfigFromEnv } from "fencelease/node";',
    'import { LeaseClient } from "fencelease/client";',
    'console.log(typeof createApp, serverConfigFromEnv({}).port, typeof new LeaseClient({ baseUrl: "http://127.0.0.1:1" }).claim);',
    // The client in-process, over a store of fencelease/node: built from dist/ as a user gets it.
    'const store = await openStore({ url: ":memory:" });',
    'const client = new LeaseClient({ store });',
    'await client.enqueue({ id: "a", queue: "q" });',
    'const [lease] = await client.claimNext("q", { owner: "w", ttlMs: 1000 });',
    'console.log(lease.job.id, lease.fence, (await client.complete("a", { owner: "w", fence: lease.fence, result: 1 })).job.status);',
    "store.close();",
    "",
  ].join("\n"),
  "wrangler.toml": [
    'name = "consumer"',
    'main = "worker.ts"',
    'compatibility_date = "2026-11-01"',
    "[[d1_databases]]",
    'binding = "DB"',
    'database_name = "consumer"',
    'database_id = "00000000-0000-0000-0000-000000000000"',
    "[[durable_objects.bindings]]",
    'name = "DOORBELL"',
    'class_name = "QueueDoorbell"',
    "[[migrations]]",
    'tag = "v1"',
    'new_sqlite_classes = ["QueueDoorbell"]',
    "",
  ].join("\n"),
};

test("the packed package installs into a new project, type-checks there for Node, a browser and a Worker, and runs", async () => {
  const dir = freshDir();
  // What `prepare` builds (dist/), then the tarball of exactly what `files` ships.
  await run(process.execPath, [join(REPO, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"]);
  await run("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", dir]);
  const [tarball] = readdirSync(dir).filter((name) => name.endsWith(".tgz"));
  expect(tarball).toBe("fencelease-0.1.0.tgz");

  const consumer = join(dir, "consumer");
  mkdirSync(consumer);
  for (const [name, content] of Object.entries(FILES)) writeFileSync(join(consumer, name), typeof content === "string" ? content : JSON.stringify(content));
  // Its dependencies come from npm's cache when they are there: the repo's own install put them there.
  await run("npm", ["install", join(dir, tarball!), "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: consumer });
  const installed = JSON.parse(readFileSync(join(consumer, "node_modules", "fencelease", "package.json"), "utf8"));
  expect(Object.keys(installed.exports)).toEqual([".", "./node", "./worker", "./client"]);
  // A Worker project has the Workers types installed; this one takes the version the repo tests with.
  mkdirSync(join(consumer, "node_modules", "@cloudflare"), { recursive: true });
  symlinkSync(join(REPO, "node_modules", "@cloudflare", "workers-types"), join(consumer, "node_modules", "@cloudflare", "workers-types"));

  for (const tsconfig of ["tsconfig.json", "tsconfig.browser.json", "tsconfig.worker.json"]) {
    const checked = await run(process.execPath, [join(REPO, "node_modules", "typescript", "bin", "tsc"), "-p", tsconfig], { cwd: consumer }).catch((error: { stdout: string }) => error);
    expect(checked.stdout, tsconfig).toBe("");
  }

  // The Node entries run from dist/ as plain JavaScript, and the bin's demo replays its story.
  expect((await run(process.execPath, ["main.js"], { cwd: consumer })).stdout).toBe("function 8787 function\na 1 done\n");
  const demo = await run(process.execPath, [join(consumer, "node_modules", ".bin", "fencelease"), "demo"], { cwd: consumer });
  expect(demo.stdout).toMatch(/A {2}completes late with fence 1 +→ 409 stale_lease \(superseded; current fence 2\)/);

  // The Worker entry is shipped as source: wrangler bundles it into the consumer's Worker.
  const outdir = join(dir, "bundle");
  const { stdout } = await run(process.execPath, [bin("wrangler"), "deploy", "--dry-run", "--outdir", outdir], {
    cwd: consumer,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true", CI: "true" },
  });
  expect(stdout).toContain("--dry-run: exiting now.");
  expect(readFileSync(join(outdir, "worker.js"), "utf8")).toMatch(/QueueDoorbell = class|class QueueDoorbell/);
}, 240_000);
