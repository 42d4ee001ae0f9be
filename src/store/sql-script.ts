// A migration file is a script of several statements; D1 and the native libSQL
// driver prepare one statement at a time, so the runner splits it first.

// A string, a quoted name, a comment, a word, a `;`, blanks, or any other character.
const TOKEN = /'(?:[^']|'')*'?|"(?:[^"]|"")*"?|`(?:[^`]|``)*`?|\[[^\]]*\]?|--[^\n]*|\/\*[\s\S]*?(?:\*\/|$)|\w+|;|\s+|[\s\S]/g;

// What SQLite skips between tokens.
const BLANK = /^(?:\s|--|\/\*)/;

/**
 * splitStatements answers the statements of a script, each with its `;`, by
 * SQLite's own rule (sqlite3_complete): a statement ends at a `;` outside a
 * string, a quoted name and a comment, except in CREATE [TEMP] TRIGGER, whose
 * body ends at an END that directly follows a `;` (so a CASE ... END inside it
 * ends nothing). A comment before a statement stays with it; what holds only
 * blanks and comments is no statement.
 */
export function splitStatements(script: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let head: string[] = []; // the statement's first three tokens, upper-cased
  let afterSemicolon = false; // in a trigger: the last token was a `;`
  let endAfterSemicolon = false; // in a trigger: the last tokens were `;` and END
  for (const match of script.matchAll(TOKEN)) {
    const token = match[0];
    if (BLANK.test(token)) continue;
    const inTrigger = head[0] === "CREATE" && (head[1] === "TRIGGER" || (/^TEMP(ORARY)?$/.test(head[1] ?? "") && head[2] === "TRIGGER"));
    if (token === ";" && (!inTrigger || endAfterSemicolon)) {
      if (head.length > 0) statements.push(script.slice(start, match.index + 1).trim());
      start = match.index + 1;
      head = [];
      afterSemicolon = endAfterSemicolon = false;
      continue;
    }
    if (head.length < 3) head.push(token.toUpperCase());
    endAfterSemicolon = afterSemicolon && token.toUpperCase() === "END";
    afterSemicolon = token === ";";
  }
  if (head.length > 0) statements.push(script.slice(start).trim());
  return statements;
}
