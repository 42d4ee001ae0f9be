/** The longest lastError the server keeps (FailBody in src/http/leases.ts); a longer message is cut. */
const MAX_ERROR_LENGTH = 10_000;

/** What a failed attempt records as the job's lastError: the error's message, or the thrown value as text. */
export function failureMessage(error: unknown): string {
  const message = error instanceof Error ? error.message || error.name : String(error);
  return message.slice(0, MAX_ERROR_LENGTH);
}
