// JSON.parse reads every number as a double, so an integer beyond ±2^53 comes
// out rounded and 1e400 as Infinity (stored as null): a payload or result
// would change without a word. This finds such a number in JSON text, so
// that it is refused instead (a request's body, a push endpoint's answer).

/** Text worth the closer look: a run of 16 or more digits, or an exponent of three digits. */
const SUSPECT = /\d{16}|[eE][+-]?\d{3}/;

/** Stands in, after parsing, for a number that was not read exactly. */
const INEXACT = Symbol("inexact number");

/** Whether the number written as `source` was read as `value` exactly; a decimal fraction or an exponent asks for a double anyway. */
function exact(value: number, source: string | undefined): boolean {
  if (!Number.isFinite(value)) return false;
  if (source === undefined || !/^-?\d+$/.test(source)) return true; // without the source text (older runtimes) only Infinity is caught
  return BigInt(source) === BigInt(value);
}

/** The path to the first INEXACT in a parsed value, or null; without recursion. */
function pathTo(value: unknown): (string | number)[] | null {
  type Visit = { value: unknown; key: string | number; parent: Visit | null };
  const stack: Visit[] = [{ value, key: "", parent: null }];
  while (stack.length > 0) {
    const visit = stack.pop()!;
    if (visit.value === INEXACT) {
      const path: (string | number)[] = [];
      for (let at: Visit | null = visit; at?.parent; at = at.parent) path.unshift(at.key);
      return path;
    }
    if (visit.value === null || typeof visit.value !== "object") continue;
    const entries = Object.entries(visit.value);
    // Pushed last to first, so that the first in the document is found first.
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, inner] = entries[i]!;
      stack.push({ value: inner, key: Array.isArray(visit.value) ? Number(key) : key, parent: visit });
    }
  }
  return null;
}

/**
 * The path (keys and indexes) to the first number of JSON `text` that
 * JSON.parse cannot read exactly, [] for the whole text; null when every
 * number reads exactly, or the text is not JSON. The parse's reviver recurses
 * once per level: measure the text's depth first (src/json/depth.ts).
 */
export function inexactNumberPath(text: string): (string | number)[] | null {
  if (!SUSPECT.test(text)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text, (_key, value, context?: { source?: string }) => (typeof value === "number" && !exact(value, context?.source) ? INEXACT : value));
  } catch {
    return null; // not JSON: whoever parses it says so
  }
  return pathTo(parsed);
}
