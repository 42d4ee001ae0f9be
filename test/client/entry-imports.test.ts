import { existsSync, readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, test } from "vitest";

// fencelease/client runs in browsers and Workers, and its in-process
// transport takes the store the caller passes: so what it loads at run time
// must hold no code of the store, the drivers or the HTTP app, nor zod, Hono,
// libSQL or a Node built-in. Type-only imports are erased and do not count; an
// `import { type A }` does (Node and verbatimModuleSyntax keep it as an import).

const SRC = fileURLToPath(new URL("../../src", import.meta.url));

/** The modules a file loads at run time: every import and re-export but `import type` and `export type`, and import(). */
function runtimeImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly) found.push((node.moduleSpecifier as ts.StringLiteral).text);
    if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly) found.push((node.moduleSpecifier as ts.StringLiteral).text);
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && ts.isStringLiteral(node.arguments[0]!)) found.push(node.arguments[0].text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Every file of src/ and every package `entry` loads at run time, transitively. */
function loadedBy(entry: string): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const walk = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const specifier of runtimeImports(file)) {
      if (!specifier.startsWith(".")) packages.add(specifier);
      else {
        const target = resolve(dirname(file), specifier);
        walk(existsSync(target) ? target : target.replace(/\.js$/, ".ts"));
      }
    }
  };
  walk(entry);
  return { files: [...files].map((file) => relative(SRC, file)).sort(), packages: [...packages].sort() };
}

describe("what fencelease/client loads", () => {
  test("no code of the store, the drivers or the HTTP app but its views, and no package but @opentelemetry/api", () => {
    const { files, packages } = loadedBy(`${SRC}/client/index.ts`);
    expect(files.filter((file) => /^(store|drivers|runtime|cli)\//.test(file) || (file.startsWith("http/") && file !== "http/views.ts"))).toEqual([]);
    expect(packages).toEqual(["@opentelemetry/api"]);
    // The walk saw the in-process transport and what it waits with: a walk that stopped early would pass for the wrong reason.
    expect(files).toEqual(expect.arrayContaining(["client/in-process/transport.ts", "client/in-process/api.ts", "wait/wait-room.ts", "wait/long-poll.ts", "wait/wake.ts", "http/views.ts"]));
  });

  test("the walk tells a type-only import from one that loads its module", () => {
    const { files, packages } = loadedBy(`${SRC}/wait/long-poll.ts`);
    expect(files).toEqual(["wait/long-poll.ts", "wait/wait-room.ts"]); // its store imports are types only
    expect(packages).toEqual([]);
    expect(loadedBy(`${SRC}/store/errors.ts`).files).toEqual(["store/errors.ts"]);
    expect(loadedBy(`${SRC}/http/errors.ts`).files).toEqual(expect.arrayContaining(["store/errors.ts", "store/migrate.ts"]));
  });
});
