// The design note's wrong fragments, made to OUR code: each one must be caught
// by the contract tests. Stryker cannot make these, since it leaves the inside
// of SQL strings alone. Run: node scripts/note-mutants.ts (Node 24).
//
// | # | The note's wrong fragment                         | The same mistake in fencelease                                      |
// |---|---------------------------------------------------|---------------------------------------------------------------------|
// | 1 | CREATE TABLE jobs (not idempotent; a restart       | src/store/migrate.ts: the runner no longer records a migration it   |
// |   |   that rebuilds the table resets the fences)       |   applies, so a reopen runs 0001_jobs.sql again                     |
// | 2 | INSERT OR REPLACE INTO jobs                        | sql/lease.ts enqueue: INSERT OR REPLACE, no ON CONFLICT DO NOTHING, |
// |   |                                                    |   so re-enqueueing wipes a lease in progress (and its fence)        |
// | 3 | if row else {}                                     | noteVerbs state: answers {} instead of null for an unknown id       |
// | 4 | row[0] >= now (claim refuses at now == until)      | sql expire, claim, claim-next: `until <= now` made `< now`          |
// | 5 | AND until>=? (renew revives an expired lease)      | sql/lease.ts currentLease: `until > now` made `until >= now`        |
// | 6 | AND done>=0 (complete ignores done)                | sql/lease.ts currentLease: `done = 0` made `done >= 0`              |
// | 7 | SET owner=NULL,until=0,fence=0 (release resets)    | sql/lease.ts release: also sets `fence = 0`                         |
// | 8 | return [claim(..., owners[0], ...)]                | noteVerbs claimMany: races only owners[0], answers one value        |
//
// For each mutant: copy src/, test/, migrations/ and the config files to a
// fresh temp dir (node_modules symlinked), apply the mutation there (the real
// src/ is never touched), run vitest on the tests that guard the rule, and
// expect them to FAIL. A search text that is not found exactly once is an
// error, so this script cannot pass by mutating nothing after the code changes.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** One textual edit: within the text from `scope` up to the next top-level export, `search` becomes `replace`. */
type Edit = { file: string; scope?: string; search: string; replace: string };

/** One of the note's fragments as a mutant of our code, and the test files that must catch it. */
type Mutant = { name: string; edits: Edit[]; tests: string[] };

const ROOT = fileURLToPath(new URL("..", import.meta.url));
// The tests run under vitest.mutation.config.ts, the same in-process contract
// tests that Stryker runs; the main vitest.config.ts also starts the Workers runtime.
const COPIED = ["src", "test", "migrations", "package.json", "tsconfig.json", "vitest.mutation.config.ts"];

const MUTANTS: Mutant[] = [
  {
    name: "1 migrate re-runs applied migrations (CREATE TABLE jobs)",
    edits: [{ file: "src/store/migrate.ts", search: '{ sql: "INSERT INTO d1_migrations (name) VALUES (?1)", args: [step.name] }', replace: '{ sql: "SELECT ?1", args: [step.name] }' }],
    tests: ["test/store/migrate.test.ts"],
  },
  {
    name: "2 enqueue INSERT OR REPLACE",
    edits: [
      { file: "src/store/sql/lease.ts", scope: "export function enqueue(", search: "INSERT INTO jobs", replace: "INSERT OR REPLACE INTO jobs" },
      { file: "src/store/sql/lease.ts", scope: "export function enqueue(", search: "ON CONFLICT (id) DO NOTHING", replace: "" },
    ],
    tests: ["test/store/store.test.ts"],
  },
  {
    name: "3 state answers {} for an unknown id",
    edits: [{ file: "src/store/note.ts", search: "(job): Job | null => job, null)", replace: "(job): Job | null => job, {} as Job)" }],
    tests: ["test/store/store.test.ts"],
  },
  {
    name: "4 claim refuses at now == until (row[0] >= now)",
    // "Claimable at now == until" is said where a claim by id ends the expired
    // lease first (expire), in the claim itself, and in claim-next's takeover
    // of an ended lease (endedDue, which takeNext reads; the jobs it takes
    // unheld have until 0).
    edits: [
      { file: "src/store/sql/lease.ts", scope: "export function expire(", search: "until <= ?1", replace: "until < ?1" },
      { file: "src/store/sql/claim-next.ts", scope: "export function claim(", search: "until <= ?3", replace: "until < ?3" },
      { file: "src/store/sql/claim-next.ts", scope: "function endedDue(", search: "owner IS NOT NULL AND until <= ${now}", replace: "owner IS NOT NULL AND until < ${now}" },
    ],
    tests: ["test/store/store.test.ts"],
  },
  {
    name: "5 renew revives an expired lease (until >= now)",
    // The current-lease rule is written once, for renew, complete, fail and the lease check.
    edits: [{ file: "src/store/sql/lease.ts", scope: "function currentLease(", search: "until > ${now}", replace: "until >= ${now}" }],
    tests: ["test/store/store.test.ts"],
  },
  {
    name: "6 complete ignores done (done >= 0)",
    edits: [{ file: "src/store/sql/lease.ts", scope: "function currentLease(", search: "done = 0", replace: "done >= 0" }],
    tests: ["test/store/store.test.ts"],
  },
  {
    name: "7 release resets the fence (fence = 0)",
    edits: [{ file: "src/store/sql/lease.ts", scope: "export function release(", search: "SET owner = NULL, until = 0,", replace: "SET owner = NULL, until = 0, fence = 0," }],
    tests: ["test/store/store.test.ts"],
  },
  {
    name: "8 claimMany races only owners[0]",
    edits: [
      {
        file: "src/store/note.ts",
        search: "return Promise.all(owners.map((owner) => claim(id, owner, now, ttlMs)));",
        replace: "return [await claim(id, owners[0]!, now, ttlMs)];",
      },
    ],
    tests: ["test/store/races.test.ts"],
  },
];

/** A fresh copy of the project in a temp dir, node_modules symlinked. */
function copyProject(): string {
  const dir = mkdtempSync(join(tmpdir(), "fencelease-note-mutant-"));
  for (const entry of COPIED) cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  return dir;
}

/** Applies one edit in the copy; throws unless its search text occurs exactly once in its scope. */
function apply(dir: string, edit: Edit): void {
  const path = join(dir, edit.file);
  const text = readFileSync(path, "utf8");
  let start = 0;
  let end = text.length;
  if (edit.scope !== undefined) {
    start = text.indexOf(edit.scope);
    if (start < 0 || text.indexOf(edit.scope, start + 1) >= 0) {
      throw new Error(`${edit.file}: scope ${JSON.stringify(edit.scope)} is not found exactly once`);
    }
    const next = text.indexOf("\nexport ", start + edit.scope.length);
    if (next >= 0) end = next;
  }
  const region = text.slice(start, end);
  const at = region.indexOf(edit.search);
  if (at < 0 || region.indexOf(edit.search, at + 1) >= 0) {
    throw new Error(`${edit.file}: ${JSON.stringify(edit.search)} is not found exactly once${edit.scope ? ` in ${edit.scope}` : ""}`);
  }
  writeFileSync(path, text.slice(0, start + at) + edit.replace + text.slice(start + at + edit.search.length));
}

type Outcome = { failed: string[]; exitCode: number | null; output: string };

/** Runs vitest on `tests` in the copy and answers the names of the tests (or files) that failed. */
function runTests(dir: string, tests: string[]): Outcome {
  const report = join(dir, "vitest-report.json");
  const run = spawnSync(
    process.execPath,
    [join(dir, "node_modules/vitest/vitest.mjs"), "run", "--config", "vitest.mutation.config.ts", ...tests, "--reporter=json", `--outputFile=${report}`],
    // That config skips the OS-process races: slow, and no mutant here is theirs alone.
    { cwd: dir, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } },
  );
  const output = `${run.stdout}${run.stderr}`;
  if (!existsSync(report)) return { failed: [`(no report: vitest exited ${run.status})`], exitCode: run.status, output };
  const results = JSON.parse(readFileSync(report, "utf8")) as {
    testResults: { name: string; status: string; message?: string; assertionResults: { fullName: string; status: string }[] }[];
  };
  const failed: string[] = [];
  for (const file of results.testResults) {
    const short = file.name.slice(dir.length + 1);
    const failing = file.assertionResults.filter((test) => test.status === "failed");
    for (const test of failing) failed.push(`${short} > ${test.fullName}`);
    if (failing.length === 0 && file.status === "failed") failed.push(`${short} (failed to load: ${file.message?.split("\n")[0] ?? "?"})`);
  }
  if (failed.length === 0 && run.status !== 0) failed.push(`(vitest exited ${run.status})`);
  return { failed, exitCode: run.status, output };
}

function main(): number {
  const started = Date.now();
  let bad = 0;

  // The tests must pass on the unmutated copy, or a "killed" below would mean nothing.
  const allTests = [...new Set(MUTANTS.flatMap((mutant) => mutant.tests))];
  const baselineDir = copyProject();
  try {
    const baseline = runTests(baselineDir, allTests);
    if (baseline.failed.length > 0 || baseline.exitCode !== 0) {
      console.error(`baseline FAILED: the unmutated copy does not pass ${allTests.join(" ")}`);
      for (const name of baseline.failed) console.error(`  ${name}`);
      console.error(baseline.output.slice(-2000));
      return 1;
    }
  } finally {
    rmSync(baselineDir, { recursive: true, force: true });
  }

  const width = Math.max(...MUTANTS.map((mutant) => mutant.name.length));
  for (const mutant of MUTANTS) {
    const dir = copyProject();
    try {
      try {
        for (const edit of mutant.edits) apply(dir, edit);
      } catch (error) {
        bad++;
        console.log(`${mutant.name.padEnd(width)}  MISSING    ${(error as Error).message}`);
        continue;
      }
      const { failed } = runTests(dir, mutant.tests);
      if (failed.length === 0) {
        bad++;
        console.log(`${mutant.name.padEnd(width)}  SURVIVED   no test in ${mutant.tests.join(", ")} failed`);
      } else {
        const shown = failed.slice(0, 3).join(" | ");
        const more = failed.length > 3 ? ` (+${failed.length - 3} more)` : "";
        console.log(`${mutant.name.padEnd(width)}  killed     ${failed.length} failed: ${shown}${more}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`${MUTANTS.length - bad}/${MUTANTS.length} note mutants killed in ${seconds} s`);
  return bad === 0 ? 0 : 1;
}

process.exitCode = main();
