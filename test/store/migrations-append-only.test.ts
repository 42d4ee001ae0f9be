import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

// Migrations are append-only (CONTRIBUTING.md): a file of migrations/ that has
// landed on main reads, in the working tree, as it did when it landed. The
// runner refuses a database whose applied migration was edited since
// (src/store/migrate.ts); this test refuses the edit itself, before it lands.
// It reads main's first-parent history (a clone with its history, as CI's).

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

// The edits made before the rule, each reviewed: what a database made before
// them needs is in src/store/migration-repairs.ts.
const EDITED_BEFORE_THE_RULE: Record<string, string> = {
  "577ca5d38c98f40876006b216db476e3597dd990": "0004 and 0006-0011: the paths their comments name, after the move to folders by role (comments only)",
  e8a301aeec16d7175cdfd14a4c4c81e107c50c26: "0031: a delivery counted by its statement, not by a trigger on events",
  "031268aa39a7c02caec945da8d5d26cdce33d067": "0013, 0014, 0015: the clocks' columns and the spend trigger",
};

function git(...args: string[]): string {
  return execFileSync("git", args, { cwd: ROOT, encoding: "utf8", maxBuffer: 1 << 26 });
}

/** Each migration's changes on the first-parent history of HEAD, oldest first: the commit, A/M/D, and the blob after it. */
function landings(): Map<string, { commit: string; change: string; blob: string }[]> {
  const log = git("log", "--first-parent", "--reverse", "--diff-merges=first-parent", "--raw", "--no-abbrev", "--no-renames", "--format=commit %H", "--", "migrations/");
  const changes = new Map<string, { commit: string; change: string; blob: string }[]>();
  let commit = "";
  for (const line of log.split("\n")) {
    if (line.startsWith("commit ")) commit = line.slice("commit ".length);
    const raw = /^:\d+ \d+ [0-9a-f]+ ([0-9a-f]+) ([AMD])\tmigrations\/(.+)$/.exec(line);
    if (raw) changes.set(raw[3]!, [...(changes.get(raw[3]!) ?? []), { commit, change: raw[2]!, blob: raw[1]! }]);
  }
  return changes;
}

describe("migrations are append-only", () => {
  test("the history is here to check against", () => {
    expect(git("rev-parse", "--is-shallow-repository").trim(), "a shallow clone cannot tell what landed: clone with the whole history").toBe("false");
    expect(landings().get("0001_jobs.sql")?.[0]?.change).toBe("A");
  });

  test("no migration that landed on main was edited or removed since, in a commit or in the working tree", () => {
    const files = readdirSync(new URL("../../migrations/", import.meta.url)).filter((name) => name.endsWith(".sql"));
    const inTree = new Map(files.map((name, i) => [name, git("hash-object", ...files.map((file) => `migrations/${file}`)).trim().split("\n")[i]!]));
    const broken: string[] = [];
    for (const [name, changes] of landings()) {
      const [landed, ...later] = changes;
      const edits = later.filter((change) => !(change.commit in EDITED_BEFORE_THE_RULE));
      if (edits.length > 0) broken.push(`migrations/${name} was ${edits[0]!.change === "D" ? "removed" : "edited"} in ${edits[0]!.commit.slice(0, 7)} after it landed in ${landed!.commit.slice(0, 7)}`);
      const expected = (later.at(-1) ?? landed!).blob;
      if (later.at(-1)?.change !== "D" && inTree.get(name) !== expected) broken.push(`migrations/${name} ${inTree.has(name) ? "differs" : "is gone"} in the working tree from what landed`);
    }
    expect(broken, "put the change in a new migration, and restore these as they landed").toEqual([]);
  });
});
