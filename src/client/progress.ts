/** The most bytes of UTF-8 a progress report may take as JSON (MAX_PROGRESS_BYTES in src/store/validate.ts). */
export const MAX_PROGRESS_BYTES = 4096;

const utf8 = new TextEncoder();

/**
 * A copy of a progress report, checked as the server checks it: a JSON value
 * of at most MAX_PROGRESS_BYTES as JSON text. Checked here, when the handler
 * reports it, because a report the server refuses would refuse the whole
 * renew that carries it, and with it every lease of a renewMany.
 */
export function checkedProgress(value: unknown): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(value, (_key, inner: unknown) => {
      // JSON would carry these as null: refuse rather than change the value, as the server does.
      if (typeof inner === "number" && !Number.isFinite(inner)) throw new TypeError("it must not hold NaN or Infinity, which JSON cannot carry");
      return inner;
    });
  } catch (error) {
    throw new TypeError(`progress must be a JSON value: ${(error as Error).message}`);
  }
  if (text === undefined) throw new TypeError(`progress must be a JSON value, got ${String(value)}`);
  const bytes = utf8.encode(text).byteLength;
  if (bytes > MAX_PROGRESS_BYTES) throw new RangeError(`progress must be at most ${MAX_PROGRESS_BYTES} bytes as JSON, got ${bytes}; keep the details elsewhere and report a summary`);
  return JSON.parse(text); // a copy: what was reported, whatever the handler changes later
}

/** What a renew carries: the progress to report, if there is one. */
export type Report = { progress?: unknown };

/**
 * PendingProgress keeps the latest progress a handler reported until a renew
 * takes it: reports in between replace each other, so a handler may report as
 * often as it likes and costs no request of its own.
 */
export class PendingProgress {
  #report: Report = {};

  /** Keeps `value` (checked, copied) for the next renew; throws TypeError or RangeError for a value the server would refuse. */
  report(value: unknown): void {
    this.#report = { progress: checkedProgress(value) };
  }

  /** Takes what the next renew carries, leaving nothing pending. */
  take(): Report {
    const taken = this.#report;
    this.#report = {};
    return taken;
  }

  /** Puts back what a renew that did not get through carried, unless a newer report came meanwhile. */
  putBack(taken: Report): void {
    if ("progress" in taken && !("progress" in this.#report)) this.#report = taken;
  }
}
