// Text from a request or a server answer, made safe to print: a control
// character in a URL (%0A) or an id could otherwise forge a log line or send
// escape sequences to a terminal.

/** Control characters (C0, DEL, C1), line and paragraph separators, and bidirectional overrides, as a regular expression's character class (a JSON Schema pattern uses it too). */
export const UNPRINTABLE_CLASS = String.raw`[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]`;

const UNPRINTABLE = new RegExp(UNPRINTABLE_CLASS, "g");

/** Whether a text holds a character that `printable` would escape. */
export function hasUnprintable(text: string): boolean {
  UNPRINTABLE.lastIndex = 0;
  return UNPRINTABLE.test(text);
}

/** The text on one line, each unprintable character written as its `\uXXXX` escape. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
