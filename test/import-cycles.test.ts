import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, test } from "vitest";

// An import cycle makes the load order decide what a module sees (an import
// still undefined while its module runs), and it ties two files into one unit
// that cannot be read, tested or moved alone. Type-only imports count too:
// they are the same knot for a reader, and the seam is to move the types.

const SRC = fileURLToPath(new URL("../src", import.meta.url));

/** Every .ts file under `root` (declaration files aside). */
function sources(root: string): string[] {
  return readdirSync(root, { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts") && !name.endsWith(".d.ts"))
    .sort()
    .map((name) => join(root, name));
}

/** Each file and the files of `root` it imports (static, type-only, re-exports and dynamic import() alike). */
function importGraph(root: string): Map<string, string[]> {
  const files = new Set(sources(root));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const targets = importedFiles
      .map(({ fileName }) => fileName)
      .filter((name) => name.startsWith("."))
      .map((name) => resolve(dirname(file), name))
      .map((target) => (existsSync(target) ? target : target.replace(/\.js$/, ".ts")))
      .filter((target) => files.has(target));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The cycles of a graph, one per strongly connected component of more than one file (or a file that imports itself), each as a path that closes. */
function cycles(graph: Map<string, string[]>): string[][] {
  // Tarjan's algorithm: components, then one closed path through each.
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string) => {
    order.set(file, order.size);
    low.set(file, order.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file)!) {
      if (!order.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, order.get(next)!));
    }
    if (low.get(file) !== order.get(file)) return;
    const component = new Set<string>();
    for (let member = stack.pop()!; ; member = stack.pop()!) {
      onStack.delete(member);
      component.add(member);
      if (member === file) break;
    }
    if (component.size > 1 || graph.get(file)!.includes(file)) found.push(closedPath(graph, file, component));
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return found;
}

/** A shortest path from `start` back to itself inside its component: the cycle as a reader follows it. */
function closedPath(graph: Map<string, string[]>, start: string, component: Set<string>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const next of graph.get(file)!) {
      if (!component.has(next)) continue;
      if (next === start) {
        const path = [start];
        for (let at = file; at !== start; at = cameFrom.get(at)!) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!cameFrom.has(next)) {
        cameFrom.set(next, file);
        queue.push(next);
      }
    }
  }
  return [start, start];
}

describe("imports", () => {
  test("no module of src/ imports itself, directly or through others", () => {
    const graph = importGraph(SRC);
    const found = cycles(graph).map((cycle) => cycle.map((file) => relative(SRC, file)).join(" -> "));
    expect(found).toEqual([]);
    // The walk saw the imports: a graph without edges would pass for the wrong reason.
    expect(graph.get(join(SRC, "client/index.ts"))).toContain(join(SRC, "client/lease-client.ts"));
    expect(graph.size).toBeGreaterThan(50);
  });

  test("the check finds a cycle through a type-only import, and names its files in order", () => {
    const root = mkdtempSync(join(tmpdir(), "fencelease-cycles-"));
    try {
      writeFileSync(join(root, "a.ts"), `import { b } from "./b.ts";\nexport const a = b;\nexport type A = number;\n`);
      writeFileSync(join(root, "b.ts"), `import type { C } from "./c.ts";\nexport const b: C = 1;\n`);
      writeFileSync(join(root, "c.ts"), `export type { A } from "./a.ts";\nexport type C = number;\n`);
      writeFileSync(join(root, "d.ts"), `// import "./d.ts" in a comment is no import\nimport "./a.ts";\n`);
      const found = cycles(importGraph(root)).map((cycle) => cycle.map((file) => relative(root, file)));
      expect(found).toEqual([["a.ts", "b.ts", "c.ts", "a.ts"]]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
