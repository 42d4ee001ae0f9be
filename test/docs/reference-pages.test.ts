// The reference pages hold to the code: every operation of the OpenAPI
// document is a row of docs/http-api.md's route table (and every row an
// operation), every command of the CLI and every exit code it has are in
// docs/cli.md, and every error class fencelease/client exports is in
// docs/client.md, with the status and code that throw it.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import * as client from "../../src/client/index.ts";
import { EXIT } from "../../src/cli/exit-codes.ts";
import { COMMANDS } from "../../src/cli/run.ts";
import { freshApp } from "../fresh-app.ts";

const DOCS = fileURLToPath(new URL("../../docs/", import.meta.url));
const page = (name: string) => readFileSync(`${DOCS}${name}`, "utf8");

/** The lines of a page's section, from its heading to the next heading of the same level or above. */
function section(markdown: string, heading: string): string[] {
  const lines = markdown.split("\n");
  const start = lines.indexOf(heading);
  expect(start, heading).toBeGreaterThan(-1);
  const level = heading.indexOf(" ");
  const end = lines.findIndex((line, i) => i > start && /^#+ /.test(line) && line.indexOf(" ") <= level);
  return lines.slice(start + 1, end === -1 ? undefined : end);
}

/** The first cell of each row of the tables in `lines`, header and rule left out. */
function firstCells(lines: string[]): string[] {
  const rows = lines.filter((line) => line.startsWith("|") && !/^\|[-| ]+\|$/.test(line));
  return rows.map((line) => line.split("|")[1]!.trim());
}

describe("docs/http-api.md", () => {
  test("its route table has a row for every operation of the OpenAPI document, and no other", async () => {
    const { body } = await (await freshApp()).call("GET", "/openapi.json");
    const operations = Object.entries(body.paths as Record<string, object>).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`));
    const rows = firstCells(section(page("http-api.md"), "## Routes")).filter((cell) => cell.startsWith("`")).map((cell) => cell.replace(/^`|`$/g, "").replace(/\?.*$/, ""));
    expect(operations.length).toBeGreaterThan(30);
    expect(rows.toSorted()).toEqual(operations.toSorted());
  });
});

describe("docs/cli.md", () => {
  const cli = page("cli.md");

  test("names every command, with its arguments as the CLI takes them", () => {
    const names = ["serve", "migrate", "demo", ...Object.keys(COMMANDS)];
    expect(names.filter((name) => !new RegExp(`\`${name.replace(/[-]/g, "\\-")}[ \`]`).test(cli))).toEqual([]);
  });

  test("its table of exit codes has every code the CLI exits with, and no other", () => {
    const codes = firstCells(section(cli, "## Exit codes")).filter((cell) => /^\d+$/.test(cell)).map(Number);
    expect(codes.toSorted()).toEqual(Object.values(EXIT).toSorted());
  });
});

describe("docs/client.md", () => {
  const errorClasses = Object.entries(client).filter(([, value]) => typeof value === "function" && value.prototype instanceof Error) as [string, new (...args: never[]) => Error][];
  const rows = section(page("client.md"), "## Errors").filter((line) => /^\| `\w+Error` \|/.test(line));

  test("names every error class that fencelease/client exports", () => {
    expect(errorClasses.map(([name]) => name)).toEqual(expect.arrayContaining(["FenceleaseError", "ForbiddenError", "PushVerificationError"]));
    expect(errorClasses.map(([name]) => name).filter((name) => !page("client.md").includes(`\`${name}\``))).toEqual([]);
  });

  test("each row of its errors table is the error that an answer of that status and code throws", () => {
    const claims = rows.flatMap((row) => {
      const [, name, when] = /^\| `(\w+)` \| ([^|]*)\|/.exec(row)!;
      return [...when!.matchAll(/(\d{3}) `(\w+)`/g)].map(([, status, code]) => ({ name: name!, status: Number(status), code: code! }));
    });
    expect(claims.map(({ code }) => code)).toEqual(expect.arrayContaining(["stale_lease", "forbidden", "unauthorized", "payload_too_large"]));
    for (const { name, status, code } of claims) {
      const thrown = client.errorFromResponse(status, { error: { code, message: "m" } });
      expect(thrown.constructor.name, `${status} ${code}`).toBe(name);
    }
  });
});
