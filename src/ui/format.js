// @ts-check
// How numbers and times read on the page.

/**
 * A duration for people: "850 ms", "12.3 s", "4 min 05 s", "3 h 12 min", "2 d 4 h".
 * @param {number} ms
 */
export function duration(ms) {
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(ms)} ms`;
  if (abs < 60_000) return `${(ms / 1_000).toFixed(abs < 10_000 ? 2 : 1)} s`;
  const s = Math.floor(abs / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
  if (s < 86_400) return `${Math.floor(s / 3_600)} h ${Math.floor((s % 3_600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3_600)} h`;
}

/**
 * A time on the job's own clock: how long after the job was created.
 * @param {number} at
 * @param {number} origin
 */
export function offset(at, origin) {
  return `+${duration(at - origin)}`;
}

/**
 * A moment, in the reader's time zone, to the millisecond: fences are decided that finely.
 * @param {number} at ms since the epoch
 */
export function moment(at) {
  const date = new Date(at);
  const pad = (/** @type {number} */ n, width = 2) => String(n).padStart(width, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

/**
 * Any JSON value, indented.
 * @param {unknown} value
 */
export function prettyJson(value) {
  return JSON.stringify(value, null, 2) ?? "undefined";
}
