import { FenceleaseError } from "../client/errors.ts";
import { inFlagTerms } from "./field-flags.ts";

/** The CLI's exit codes: a script can tell a refusal from a typo from an outage. */
export const EXIT = {
  ok: 0,
  failed: 1,
  badInput: 2,
  notFound: 3,
  refused: 4,
  unreachable: 5,
  unauthorized: 6,
  forbidden: 7,
} as const;

/** A mistake in the command line itself, found before anything was sent. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** The exit code for an error, and the one line that says what happened. */
export function exitFor(error: unknown): { code: number; line: string } {
  if (error instanceof UsageError) return { code: EXIT.badInput, line: `${error.message} (see fencelease --help)` };
  if (!(error instanceof FenceleaseError)) return { code: EXIT.failed, line: (error as Error)?.message ?? String(error) };
  const why = error.details?.reason ?? error.details?.status; // a refusal's reason, or the status a conflict found
  const detail = why === undefined ? "" : ` (${why})`;
  // A 400 names the API's fields, and a 401 its header; the person typed options.
  const line = `${error.code}${detail}: ${error.status === 400 ? inFlagTerms(error.message) : error.status === 401 ? inTokenTerms(error.message) : error.message}`;
  if (error.status === 409) return { code: EXIT.refused, line: `refused, ${line}` };
  if (error.status === 404) return { code: EXIT.notFound, line };
  if (error.status === 400 || error.status === 413) return { code: EXIT.badInput, line };
  if (error.status === 401) return { code: EXIT.unauthorized, line };
  if (error.status === 403) return { code: EXIT.forbidden, line };
  if (error.status === 503 || error.status === 0) return { code: EXIT.unreachable, line };
  return { code: EXIT.failed, line };
}

/** A 401's message with the option that gives a token in place of the HTTP header the server names. */
function inTokenTerms(message: string): string {
  return message.replace(/^send the header Authorization: Bearer <token>$/, "no token was sent: give one with --token T, or set FENCELEASE_TOKEN");
}
