// How deep a JSON value may nest, and how that is measured. A value nested
// thousands of levels deep is cheap to send and to parse (JSON.parse does not
// recurse), but every step after it does: JSON.stringify (which Hono uses to
// write every answer), a reviver, a validator. Where each of those overflows
// the stack depends on the runtime and on how deep the stack already is, so
// without one rule a value could be accepted on one runtime and refused on
// another, or accepted and then fail every read of the job. One limit, far
// below all of them and below SQLite's own (1000 levels for json(), json_each
// and json_group_array, so that a statement may pass stored values through
// them), checked when a value comes in from anywhere: a request's body, the
// store's verbs, a push endpoint's answer.

/** The most levels of arrays and objects a JSON value that fencelease keeps may nest: a payload, a result, a progress report, a schedule's payload. `[[1]]` nests 2, `1` none. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text nests more than `max` levels of arrays and objects,
 * counted over the text itself (the brackets outside its strings), without
 * parsing it: any depth is measured in one pass, with no recursion. Of text
 * that is not JSON, the answer says nothing useful.
 */
export function textNestsDeeper(text: string, max = MAX_JSON_DEPTH): boolean {
  // JSON deeper than `max` has max + 1 openings and as many closings: most texts are shorter.
  if (text.length < 2 * (max + 1)) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit === 0x22) i = stringEnd(text, i);
    else if (unit === 0x5b || unit === 0x7b) {
      if (++depth > max) return true;
    } else if (unit === 0x5d || unit === 0x7d) depth--;
  }
  return false;
}

/** Where the JSON string that opens at `start` closes: its next quote that no backslash escapes (the text's end if none). */
function stringEnd(text: string, start: number): number {
  for (let quote = text.indexOf('"', start + 1); quote !== -1; quote = text.indexOf('"', quote + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote;
  }
  return text.length;
}

/**
 * Whether a value nests more than `max` levels of arrays and objects as
 * JSON.stringify would write it (through toJSON), without recursion. A value
 * that holds itself nests without end.
 */
export function valueNestsDeeper(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const at = stack.pop()!;
    let inner = at.value;
    if (inner !== null && typeof inner === "object" && typeof (inner as { toJSON?: unknown }).toJSON === "function") inner = (inner as { toJSON(): unknown }).toJSON();
    if (inner === null || typeof inner !== "object") continue;
    if (at.depth === max) return true;
    for (const child of Object.values(inner)) stack.push({ value: child, depth: at.depth + 1 });
  }
  return false;
}

/**
 * A stored JSON text as the value the API shows. A text nested deeper than
 * MAX_JSON_DEPTH, stored before the limit was checked, is shown as the text
 * itself, a string: parsed, every answer that holds it would fail to be
 * written, on one runtime or another.
 */
export function storedJson(text: string): unknown {
  return textNestsDeeper(text) ? text : JSON.parse(text);
}
