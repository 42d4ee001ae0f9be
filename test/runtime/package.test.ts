import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, beforeAll, expect, onTestFinished, test } from "vitest";
import { freshDir } from "../fresh-db.ts";
import { freePort, killGroup, npm, until } from "./npm-process.ts";

// The package as its users get it: packed by `npm pack` (whose prepack
// builds dist/), installed from the tarball into a new project that has only
// its own dependencies (from the registry, never linked from this repo), then
// type-checked there under the tsconfig that `tsc --init` writes, with
// exactOptionalPropertyTypes, strict and verbatimModuleSyntax set in any case:
// each entry alone, as a Node project, a web page and a Worker would. Then
// the README's client snippet runs there against `npm start`, and the
// Worker of docs/deployment.md bundles. Nothing here reads the sources in src/.

const run = promisify(execFile);
const REPO = resolve(".");
const TSC = join(REPO, "node_modules", "typescript", "bin", "tsc");
/** npm's cache for the consumer's installs: the registry's packages, kept between runs so that a rerun is quick. */
const CACHE = join(REPO, "node_modules", ".cache", "package-test-npm");

/** What every check sets whatever `tsc --init` writes (TypeScript 7's turns exactOptionalPropertyTypes on, 5.9's too). */
const STRICTER = { strict: true, exactOptionalPropertyTypes: true, verbatimModuleSyntax: true, noEmit: true };

/** The installed version of one of this repo's packages: the consumer asks the registry for the same. */
const versionHere = (name: string): string => JSON.parse(readFileSync(join(REPO, "node_modules", name, "package.json"), "utf8")).version;

/** Runs `npm install` in the consumer, through CACHE. */
async function install(dir: string, specs: string[]) {
  await run("npm", ["install", ...specs, "--cache", CACHE, "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir });
}

/** tsc's output for a project of the consumer: "" when it type-checks. */
async function typeCheck(dir: string, tsconfig: string): Promise<string> {
  return (await run(process.execPath, [TSC, "-p", tsconfig], { cwd: dir }).catch((error: { stdout: string }) => error)).stdout;
}

/** The first fenced block of `language` after `heading` in a Markdown file of this repo. */
function blockAfter(file: string, heading: string, language: string): string {
  const text = readFileSync(join(REPO, file), "utf8");
  const from = text.indexOf(`${heading}\n`);
  expect(from, `${file}: ${heading}`).toBeGreaterThan(-1);
  const block = new RegExp("```" + language + "\\n([\\s\\S]*?)```").exec(text.slice(from));
  expect(block, `${file}: a ${language} block after ${heading}`).not.toBeNull();
  return block![1]!;
}

/** The bare module names that the declarations reached from `entry` import (the package's own files followed). */
function importsReached(entry: string): string[] {
  const names = new Set<string>();
  const seen = new Set<string>();
  for (const todo = [entry]; todo.length > 0; ) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const { importedFiles, referencedFiles, typeReferenceDirectives } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    for (const { fileName } of importedFiles) {
      if (fileName.startsWith(".")) todo.push(resolve(dirname(file), fileName.replace(/\.(d\.)?[jt]s$/, ".d.ts")));
      else names.add(fileName);
    }
    for (const { fileName } of referencedFiles) todo.push(resolve(dirname(file), fileName));
    for (const { fileName } of typeReferenceDirectives) names.add(fileName);
  }
  return [...names].sort();
}

/** The first `node` on PATH outside node_modules (the system's, Node 20 here), else the one running the tests. */
function systemNode(): string {
  const dirs = (process.env.PATH ?? "").split(delimiter).filter((dir) => !dir.includes("node_modules"));
  return dirs.map((dir) => join(dir, "node")).find((path) => existsSync(path)) ?? process.execPath;
}

/** The consumer's code: each entry imported alone, and what `run` and the README's snippet need. */
const FILES: Record<string, string> = {
  "package.json": JSON.stringify({ name: "consumer", private: true, type: "module" }),
  "root.ts": `import { createApp, LeaseStore, type AppOptions, type Job } from "fencelease";\nconst limits: AppOptions["limits"] = { maxBodyBytes: undefined, maxTtlMs: 60_000 };\nconst job: Job | null = null;\nexport const root = [typeof createApp, typeof LeaseStore, limits, job];\n`,
  // The client in-process too, over a store of fencelease/node: its options take undefined as well.
  "node.ts": `import { openStore, serverConfigFromEnv, startServer } from "fencelease/node";\nimport { LeaseClient } from "fencelease/client";\nexport const node = [typeof openStore, typeof startServer, serverConfigFromEnv({}).port];\nexport const embedded = async () => new LeaseClient({ store: await openStore({ url: ":memory:" }), retry: undefined, clock: undefined });\n`,
  "browser.ts": `import { LeaseClient, LeaseLostError, runWorker } from "fencelease/client";\nconst client = new LeaseClient({ baseUrl: "https://fencelease.example", token: undefined, retry: { retries: undefined } });\nexport const browser = [client, typeof LeaseLostError, typeof runWorker];\n`,
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
};

/** A stand-in for the snippet's payment provider: it says what it was asked. */
const CHARGE_CARD = `
async function chargeCard(payload: unknown, options: { idempotencyKey: string; signal: AbortSignal }): Promise<void> {
  console.log(\`charged \${JSON.stringify(payload)} with key \${options.idempotencyKey}\`);
}
`;

/** Each tsconfig of the consumer: `tsc --init`'s, and the settings of one kind of project over it. */
function tsconfigs(snippet: string) {
  return {
    // A Node project: Node's types (@types/node 20, for Node >= 20), and the snippet built to run.
    "tsconfig.node.json": { extends: "./tsconfig.json", compilerOptions: { ...STRICTER, types: ["node"], noEmit: false, outDir: "out", declaration: false, declarationMap: false, sourceMap: false }, files: ["root.ts", "node.ts", snippet] },
    // A web page that calls the API: the DOM, no Node types at all.
    "tsconfig.browser.json": { extends: "./tsconfig.json", compilerOptions: { ...STRICTER, types: [], lib: ["esnext", "dom"], module: "preserve", moduleResolution: "bundler" }, files: ["browser.ts"] },
    // A Worker project, as Cloudflare's templates set one up: the Workers types and no DOM.
    "tsconfig.worker.json": { extends: "./tsconfig.json", compilerOptions: { ...STRICTER, types: ["@cloudflare/workers-types"], lib: ["esnext"], module: "preserve", moduleResolution: "bundler" }, files: ["worker.ts"] },
  };
}

let packed: { dir: string; tarball: string };
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "fencelease-package-"));
  // `npm pack` runs prepack, which builds dist/ anew.
  await run("npm", ["pack", "--silent", "--pack-destination", dir], { cwd: REPO, env: { ...process.env, npm_config_loglevel: "error" } });
  packed = { dir, tarball: join(dir, "fencelease-0.1.0.tgz") };
}, 120_000);
afterAll(() => rmSync(packed.dir, { recursive: true, force: true }));

test("the packed package holds dist/'s JavaScript and declarations (the client's in-process transport among them), the migrations and the dashboard, and nothing of the repo's sources, tests or scratch files", async () => {
  const files = (await run("tar", ["-tzf", packed.tarball])).stdout.trim().split("\n").map((path) => path.replace(/^package\//, ""));
  expect(files.filter((path) => !/^(dist\/.+\.(js|d\.ts)|migrations\/\d{4}_\w+\.sql|src\/ui\/(.+\.(js|html|css|svg)|\.assetsignore)|src\/ui\/vendor\/swagger-ui\/(LICENSE|NOTICE)|package\.json|README\.md)$/.test(path))).toEqual([]);
  for (const path of ["dist/cli/main.js", "dist/worker.js", "dist/client/index.d.ts", "dist/client/in-process/transport.js", "dist/client/in-process/api.js", "migrations/0001_jobs.sql", "src/ui/index.html", "src/ui/vendor/swagger-ui/swagger-ui-bundle.js"]) expect(files).toContain(path);
  expect(files.filter((path) => /test|scratch|fixture|\.map$|\.ts$/.test(path) && !path.endsWith(".d.ts"))).toEqual([]);
});

test("the packed package installs into a project with only its own dependencies, type-checks there for Node, a browser and a Worker, runs the client in-process from dist/, and runs the README's snippet against npm start", async () => {
  const dir = freshDir();
  const consumer = join(dir, "consumer");
  mkdirSync(consumer);
  for (const [name, content] of Object.entries(FILES)) writeFileSync(join(consumer, name), content);
  await run(process.execPath, [TSC, "--init"], { cwd: consumer });
  await install(consumer, [packed.tarball, "@types/node@20"]);
  const installed = join(consumer, "node_modules", "fencelease");
  expect(Object.keys(JSON.parse(readFileSync(join(installed, "package.json"), "utf8")).exports)).toEqual([".", "./node", "./worker", "./client"]);

  // The entries but the Worker's reach no Workers types: the package's dependencies and Node's modules only, and the client not even Node's.
  const dependencies = Object.keys(JSON.parse(readFileSync(join(installed, "package.json"), "utf8")).dependencies);
  for (const entry of ["dist/index.d.ts", "dist/node.d.ts"]) expect(importsReached(join(installed, entry)).filter((name) => !name.startsWith("node:") && !dependencies.includes(name)), entry).toEqual([]);
  expect(importsReached(join(installed, "dist/client/index.d.ts")).filter((name) => !dependencies.includes(name))).toEqual([]);

  const snippet = blockAfter("README.md", "### With the client, in TypeScript", "ts");
  expect(snippet).toContain('baseUrl: "http://127.0.0.1:8787"');
  const port = await freePort();
  writeFileSync(join(consumer, "readme-snippet.ts"), snippet.replace("http://127.0.0.1:8787", `http://127.0.0.1:${port}`) + CHARGE_CARD);
  for (const [name, tsconfig] of Object.entries(tsconfigs("readme-snippet.ts"))) writeFileSync(join(consumer, name), JSON.stringify(tsconfig));
  expect(await typeCheck(consumer, "tsconfig.node.json")).toBe("");
  expect(await typeCheck(consumer, "tsconfig.browser.json")).toBe("");

  // The Node entries run from dist/ as plain JavaScript on the system's Node (the client in-process over openStore among them), and the bin's demo replays its story.
  const node = systemNode();
  expect((await run(node, ["main.js"], { cwd: consumer })).stdout).toBe("function 8787 function\na 1 done\n");
  const demo = await run(node, [join(consumer, "node_modules", ".bin", "fencelease"), "demo"], { cwd: consumer });
  expect(demo.stdout).toMatch(/A {2}completes late with fence 1 +→ 409 stale_lease \(superseded; current fence 2\)/);

  // The README's snippet, built by the consumer's tsc, against `npm start` of this repo: it enqueues, its worker charges once and completes, and a SIGTERM stops it.
  const server = npm(["start"], port);
  try {
    expect(await until(() => server.output().stdout.includes(`listening on http://127.0.0.1:${port}`), 30_000)).toBe(true);
    const worker = spawn(node, ["out/readme-snippet.js"], { cwd: consumer, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, FENCELEASE_TOKEN: undefined } });
    const lines = createInterface({ input: worker.stdout })[Symbol.asyncIterator]();
    expect((await lines.next()).value).toBe('charged {"amount":120} with key invoice-44');
    const job = async () => (await fetch(`http://127.0.0.1:${port}/v1/jobs/invoice-44`)).json() as Promise<Record<string, unknown>>;
    expect(await until(async () => (await job()).status === "done", 10_000)).toBe(true);
    expect(await job()).toMatchObject({ queue: "invoices", payload: { amount: 120 }, owner: "worker-a", fence: 1, attempts: 1, result: { charged: true } });
    const exited = once(worker, "exit");
    worker.kill("SIGTERM");
    expect(await exited).toEqual([0, null]);
  } finally {
    killGroup(server);
  }

  // A Worker project installs the Workers types itself (the package's optional peer); its Worker is the one of docs/deployment.md.
  await install(consumer, [`@cloudflare/workers-types@${versionHere("@cloudflare/workers-types")}`]);
  writeFileSync(join(consumer, "worker.ts"), blockAfter("docs/deployment.md", "### A Worker of your own", "ts"));
  writeFileSync(join(consumer, "wrangler.toml"), blockAfter("docs/deployment.md", "### A Worker of your own", "toml"));
  expect(await typeCheck(consumer, "tsconfig.worker.json")).toBe("");
  const outdir = join(dir, "bundle");
  const { stdout } = await run(process.execPath, [join(REPO, "node_modules", "wrangler", "bin", "wrangler.js"), "deploy", "--dry-run", "--outdir", outdir], {
    cwd: consumer,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true", CI: "true" },
  });
  expect(stdout).toContain("--dry-run: exiting now.");
  const bundle = readFileSync(join(outdir, "worker.js"), "utf8");
  expect(bundle).toMatch(/QueueDoorbell = class|class QueueDoorbell/);
  expect(readdirSync(outdir).filter((name) => name.endsWith(".sql"))).toHaveLength(readdirSync(join(installed, "migrations")).length);
}, 180_000);

/** A unit file's [Service] settings: each key's values in order (Environment= comes many times). */
function serviceSettings(unit: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  const service = unit.slice(unit.indexOf("[Service]"), unit.indexOf("[Install]"));
  for (const [, key, value] of service.matchAll(/^(\w+)=(.*)$/gm)) settings.set(key!, [...(settings.get(key!) ?? []), value!]);
  return settings;
}

/** The system user that a useradd line makes, made in a copy of this machine's user files (chroot), not on the machine: its uid, gid, home and shell. */
async function userFrom(useradd: string, dir: string): Promise<{ uid: number; gid: number; home: string; shell: string; group: string }> {
  const root = join(dir, "chroot");
  mkdirSync(join(root, "etc"), { recursive: true });
  for (const file of ["passwd", "group", "shadow", "gshadow", "login.defs"]) if (existsSync(`/etc/${file}`)) copyFileSync(`/etc/${file}`, join(root, "etc", file));
  await run("sh", ["-c", useradd.replace(/^useradd /, `useradd --root ${root} `)]);
  const [, , uid, gid, , home, shell] = readFileSync(join(root, "etc", "passwd"), "utf8").split("\n").find((line) => line.startsWith("fencelease:"))!.split(":");
  const group = readFileSync(join(root, "etc", "group"), "utf8").split("\n").find((line) => line.split(":")[2] === gid)!.split(":")[0]!;
  return { uid: Number(uid), gid: Number(gid), home: home!, shell: shell!, group };
}

const asRoot = process.getuid?.() === 0;

test.skipIf(!asRoot)("docs/deployment.md's systemd unit passes systemd-analyze verify, and its ExecStart serves the tarball installed with --omit=dev, on the system's Node, as the system user its useradd line makes; its KillSignal stops it (as root only)", async () => {
  const dir = freshDir();
  chmodSync(dir, 0o755); // the service's user reaches the install through it
  const unit = blockAfter("docs/deployment.md", "### A systemd unit", "ini");
  const setup = blockAfter("docs/deployment.md", "### A systemd unit", "sh").split("\n");
  const install = blockAfter("docs/deployment.md", "### In production", "sh").split("\n").map((line) => line.replace(/\s+#.*$/, ""));

  writeFileSync(join(dir, "fencelease.service"), unit);
  const verified = await run("systemd-analyze", ["verify", join(dir, "fencelease.service")]).catch((error: { stdout: string; stderr: string }) => error);
  expect({ stdout: verified.stdout, stderr: verified.stderr }).toEqual({ stdout: "", stderr: "" });

  const user = await userFrom(setup.find((line) => line.startsWith("useradd "))!, dir);
  expect(user).toMatchObject({ home: "/var/lib/fencelease", shell: "/usr/sbin/nologin", group: "fencelease" });
  expect(user.uid).toBeLessThan(1000); // a system user
  const service = serviceSettings(unit);
  expect([service.get("User"), service.get("Group"), service.get("KillSignal")]).toEqual([["fencelease"], ["fencelease"], ["SIGTERM"]]);

  // The docs' install, with /opt/fencelease and /var/lib/fencelease here: no dev dependency comes with it.
  expect(install).toContain("npm install --prefix /opt/fencelease --omit=dev ./fencelease-0.1.0.tgz");
  const opt = join(dir, "opt");
  await run("npm", ["install", "--prefix", opt, "--omit=dev", packed.tarball, "--cache", CACHE, "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"]);
  expect(["typescript", "wrangler", "vitest", "@cloudflare/workers-types"].filter((name) => existsSync(join(opt, "node_modules", name)))).toEqual([]);
  const state = join(dir, "state"); // StateDirectory: made for the user
  mkdirSync(state);
  chownSync(state, user.uid, user.gid);
  const here = (text: string) => text.replaceAll("/opt/fencelease", opt).replaceAll("/var/lib/fencelease", state);

  const port = await freePort();
  const environment = Object.fromEntries(service.get("Environment")!.map((pair) => here(pair).split(/=(.*)/s).slice(0, 2)));
  const env = { PATH: "/usr/bin:/bin", ...environment, PORT: String(port), FENCELEASE_TOKENS: "unit-token" }; // EnvironmentFile's line
  const [node, ...args] = here(service.get("ExecStart")![0]!).split(" ");
  expect(Number(/^v(\d+)/.exec((await run(node!, ["--version"])).stdout)![1])).toBeGreaterThanOrEqual(20);
  const served = spawn("setpriv", ["--reuid", String(user.uid), "--regid", String(user.gid), "--clear-groups", "--", node!, ...args], { cwd: here(service.get("WorkingDirectory")![0]!), env, stdio: ["ignore", "pipe", "pipe"] });
  onTestFinished(() => void served.kill("SIGKILL"));
  let output = "";
  for (const stream of [served.stdout, served.stderr]) stream.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const base = `http://127.0.0.1:${port}`;
  expect(await until(async () => (await fetch(`${base}/healthz`).catch(() => null))?.ok === true, 30_000), output).toBe(true);
  expect(readFileSync(`/proc/${served.pid}/status`, "utf8")).toMatch(new RegExp(`^Uid:\\s+${user.uid}\\s`, "m"));
  const enqueue = (token?: string) => fetch(`${base}/v1/jobs`, { method: "POST", headers: { "Content-Type": "application/json", ...(token ? { Authorization: `Bearer ${token}` } : {}) }, body: '{"id":"invoice-1"}' });
  expect((await enqueue()).status).toBe(401);
  expect((await enqueue("unit-token")).status).toBe(201);
  expect(statSync(join(state, "fencelease.db")).uid).toBe(user.uid);

  const exited = once(served, "exit");
  served.kill("SIGTERM");
  expect(await exited).toEqual([0, null]);
  expect(output).toContain("SIGTERM: finishing requests in flight, then closing the database");
}, 120_000);
