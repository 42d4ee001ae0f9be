// The docs as a reader meets them: every relative link and #anchor in
// README.md, CONTRIBUTING.md and docs/*.md leads somewhere, every repository
// path they name exists (the tree moves; the docs must follow), every docs
// page can be reached from the README, and the README's commands are the
// ones CI runs. Reads files only: no network, no server.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The pages under check, relative to `root`: the README, CONTRIBUTING and every page of docs/. */
function pages(root: string): string[] {
  const docs = existsSync(join(root, "docs")) ? readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).sort() : [];
  return ["README.md", "CONTRIBUTING.md", ...docs.map((name) => `docs/${name}`)].filter((page) => existsSync(join(root, page)));
}

/** The page's lines with fenced code blocks blanked out: a link or heading in code is neither. */
function prose(markdown: string): string[] {
  let fence: string | null = null;
  return markdown.split("\n").map((line) => {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === null && marker) {
      fence = marker;
      return "";
    }
    if (fence !== null) {
      if (marker && marker.startsWith(fence)) fence = null;
      return "";
    }
    return line;
  });
}

/** The anchor GitHub gives a heading: its text in lower case, punctuation dropped, each space a hyphen (github-slugger's rule). */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link in a heading counts by its text
    .replace(/<[^>]+>/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a page: its headings' slugs (a repeated one gets -1, -2, ... as on GitHub) and any explicit `<a id>` or `<a name>`. */
function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(markdown)) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const base = slug(heading);
      const times = seen.get(base) ?? 0;
      seen.set(base, times + 1);
      found.add(times === 0 ? base : `${base}-${times}`);
    }
    for (const [, id] of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) found.add(id!);
  }
  return found;
}

/** Every link target of a page, with its line: inline links and images, reference definitions, and HTML href/src. */
function links(markdown: string): { line: number; target: string }[] {
  const found: { line: number; target: string }[] = [];
  prose(markdown).forEach((text, i) => {
    const line = text.replace(/`[^`]*`/g, ""); // code spans are not links
    for (const [, target] of line.matchAll(/!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) found.push({ line: i + 1, target: target! });
    for (const [, target] of line.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/g)) found.push({ line: i + 1, target: target! });
    for (const [, target] of line.matchAll(/\s(?:href|src)="([^"]+)"/g)) found.push({ line: i + 1, target: target! });
  });
  return found;
}

/** Whether a target leaves the repository: a URL with a scheme, or a protocol-relative one. */
function external(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//");
}

/** The relative links of the pages that lead nowhere: a file that does not exist, or an #anchor that no heading of the target has. */
function brokenLinks(root: string): string[] {
  const broken: string[] = [];
  const anchorsOf = new Map<string, Set<string>>();
  const anchorsIn = (file: string) => {
    if (!anchorsOf.has(file)) anchorsOf.set(file, anchors(readFileSync(join(root, file), "utf8")));
    return anchorsOf.get(file)!;
  };
  for (const page of pages(root)) {
    for (const { line, target } of links(readFileSync(join(root, page), "utf8"))) {
      if (external(target)) continue;
      const [path = "", anchor] = target.split("#", 2);
      const file = path === "" ? page : normalize(join(dirname(page), decodeURIComponent(path)));
      const where = `${page}:${line}: ${target}`;
      if (file === ".." || file.startsWith(`..${sep}`)) broken.push(`${where}: leads out of the repository`);
      else if (!existsSync(join(root, file))) broken.push(`${where}: no such file`);
      else if (anchor !== undefined && anchor !== "") {
        if (!file.endsWith(".md")) broken.push(`${where}: an anchor into a file that is not markdown`);
        else if (!anchorsIn(file).has(anchor)) broken.push(`${where}: ${file} has no heading with the anchor #${anchor}`);
      }
    }
  }
  return broken;
}

// A path written from the repository's root, in a code span or plain text: src/store/sql/lease.ts, test/contract/, .ci/run.
const REPO_PATH = /(?<![\w./-])((?:src|test|scripts|bench|examples|migrations|docs|\.ci)\/[\w./-]*[\w/])/g;

/** The repository paths the pages name (outside code blocks) that do not exist. */
function missingPaths(root: string): string[] {
  const missing: string[] = [];
  for (const page of pages(root)) {
    prose(readFileSync(join(root, page), "utf8")).forEach((line, i) => {
      const text = line.replace(/\]\([^)]*\)/g, "]"); // link targets are relative to the page: brokenLinks checks them
      for (const [, path] of text.matchAll(REPO_PATH)) {
        if (!existsSync(join(root, path!))) missing.push(`${page}:${i + 1}: ${path} does not exist`);
      }
    });
  }
  return missing;
}

/** The docs pages (and CONTRIBUTING) that no chain of links from the README reaches. */
function unreachablePages(root: string): string[] {
  const reached = new Set(["README.md"]);
  const queue = ["README.md"];
  while (queue.length > 0) {
    const page = queue.shift()!;
    for (const { target } of links(readFileSync(join(root, page), "utf8"))) {
      if (external(target)) continue;
      const path = target.split("#", 1)[0]!;
      if (path === "") continue;
      const file = normalize(join(dirname(page), decodeURIComponent(path))).split(sep).join("/");
      if (file.endsWith(".md") && existsSync(join(root, file)) && !reached.has(file)) {
        reached.add(file);
        queue.push(file);
      }
    }
  }
  return pages(root).filter((page) => !reached.has(page));
}

/** The commands of a page's shell blocks: one per line, without a `$ ` prompt or a trailing `# comment`. */
function shellCommands(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/^```(?:sh|bash|shell|console)\n([\s\S]*?)^```/gm)].map((match) => match[1]!);
  return blocks.flatMap((block) => block.split("\n")).map((line) => line.replace(/^\$ /, "").replace(/\s+#.*$/, "").trim()).filter(Boolean);
}

/** The npm commands a shell script runs, in order, comments left out. */
function npmCommands(script: string): string[] {
  return script
    .split("\n")
    .map((line) => line.replace(/#.*$/, "").trim())
    .filter((line) => /^npm\s/.test(line));
}

describe("the docs' links", () => {
  test("every relative link and #anchor in README.md, CONTRIBUTING.md and docs/*.md leads to a file and a heading that exist", () => {
    expect(pages(ROOT)).toEqual(expect.arrayContaining(["README.md", "CONTRIBUTING.md", "docs/concepts.md"]));
    expect(brokenLinks(ROOT)).toEqual([]);
  });

  test("every repository path the pages name exists", () => {
    expect(missingPaths(ROOT)).toEqual([]);
  });

  test("every docs page, and CONTRIBUTING.md, can be reached from the README by its links", () => {
    expect(unreachablePages(ROOT)).toEqual([]);
  });

  test("the checks find what is broken: a missing file, a missing anchor, a link out of the repository, a path that moved, a page nobody links", () => {
    const root = mkdtempSync(join(tmpdir(), "fencelease-docs-"));
    try {
      mkdirSync(join(root, "docs"));
      mkdirSync(join(root, "src"));
      writeFileSync(join(root, "src", "here.ts"), "");
      writeFileSync(
        join(root, "README.md"),
        [
          "# fencelease",
          "See [concepts](docs/concepts.md#leases-and-fences), [the gone page](docs/gone.md),",
          "[a heading that is not there](docs/concepts.md#no-such-heading), [outside](../shared/seed),",
          "[this page](#fencelease), [a site](https://example.com/x.md#y) and `src/here.ts`, not src/statements.ts.",
          "```sh",
          "[in code](docs/not-a-link.md) src/in-code.ts",
          "```",
        ].join("\n"),
      );
      writeFileSync(join(root, "CONTRIBUTING.md"), "# Contributing\n");
      writeFileSync(join(root, "docs", "concepts.md"), "# Concepts\n\n## Leases and fences\n\n## Leases and fences\n\nBack [twice](#leases-and-fences-1), [up](../README.md#fencelease).\n");
      writeFileSync(join(root, "docs", "orphan.md"), "# Nobody links here\n");
      expect(brokenLinks(root)).toEqual([
        "README.md:2: docs/gone.md: no such file",
        "README.md:3: docs/concepts.md#no-such-heading: docs/concepts.md has no heading with the anchor #no-such-heading",
        "README.md:3: ../shared/seed: leads out of the repository",
      ]);
      expect(missingPaths(root)).toEqual(["README.md:4: src/statements.ts does not exist"]);
      expect(unreachablePages(root)).toEqual(["CONTRIBUTING.md", "docs/orphan.md"]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a heading's anchor is GitHub's: lower case, punctuation and code marks dropped, spaces as hyphens", () => {
    expect(slug("The design note's operations: `noteVerbs`")).toBe("the-design-notes-operations-noteverbs");
    expect(slug("Turso/libSQL")).toBe("tursolibsql");
    expect(slug("The client and the worker runner: `fencelease/client`")).toBe("the-client-and-the-worker-runner-fenceleaseclient");
    expect(slug("Every storage failure is a 503")).toBe("every-storage-failure-is-a-503");
    expect(slug("Limits, and what is not guaranteed")).toBe("limits-and-what-is-not-guaranteed");
  });
});

describe("the README's commands", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const ci = readFileSync(join(ROOT, ".ci", "run"), "utf8");
  const scripts = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;

  test("CI runs a clean install and then exactly `npm test`, the command the README gives", () => {
    expect(npmCommands(ci)).toEqual(["npm ci", "npm test"]);
    expect(shellCommands(readme)).toContain("npm test");
    expect(readme).toContain("`.ci/run`");
    expect(readme).toContain("`npm ci`");
  });

  test("the README starts the service with `npm install && npm start`, and both scripts exist", () => {
    expect(shellCommands(readme)).toContain("npm install && npm start");
    expect(scripts.start).toBeDefined();
    expect(scripts.test).toBeDefined();
  });

  test("the README's section that first says npm install also says what its EBADENGINE warnings are, where a reader meets them", () => {
    const at = readme.indexOf("npm install");
    const start = readme.lastIndexOf("\n## ", at);
    const end = readme.indexOf("\n## ", at);
    expect(readme.slice(start, end)).toMatch(/EBADENGINE[^]*harmless/);
  });

  test("the README stays a front page: at most 250 lines", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(250);
  });
});
