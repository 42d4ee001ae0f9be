// @ts-check
// What a queue did over an hour, a day or a month: three charts of
// GET /v1/queues/{queue}/series, drawn here as inline SVG (no library). Jobs in
// and out, failures, and the wait and run time of completed jobs. Each drawn
// point carries its step (`data-at`) and its number (`data-value`), and its own
// <title> for a pointer; each chart says in words what it shows (its
// aria-label). The SVG scales with its box, and the legend is HTML, which wraps.
import { h, svg } from "./dom.js";
import { duration } from "./format.js";

/**
 * @typedef {{ count: number, p50: number | null, p90: number | null, p99: number | null }} Quantiles
 * @typedef {"enqueued" | "completed" | "failed" | "expired" | "dead" | "refused"} Count
 * @typedef {{ at: number, wait: Quantiles, run: Quantiles } & Record<Count, number>} Point
 * @typedef {{ queue: string, step: number, from: number, to: number, keptFrom: number, points: Point[] }} Series
 * @typedef {keyof typeof RANGES} Range
 * @typedef {{ id: string, label: string, value: (point: Point) => number | null }} Line
 * @typedef {{ id: string, title: string, kind: "bars" | "stacked" | "lines", lines: Line[], format: (value: number) => string,
 *   tick: (value: number) => string, summary: (totals: string[]) => string }} Chart
 */

const MINUTE = 60_000;
const DAY = 86_400_000;

/** The ranges the charts show: a point's step and how many points, the last holding now. */
export const RANGES = {
  hour: { label: "Hour", step: MINUTE, points: 60, per: "a point a minute over the last hour" },
  day: { label: "Day", step: 15 * MINUTE, points: 96, per: "a point every 15 minutes over the last day" },
  month: { label: "Month", step: DAY, points: 30, per: "a point a day over the last 30 days" },
};

/** The range a URL names, or the hour. @param {string | null} name @returns {Range} */
export function rangeOf(name) {
  return name !== null && Object.hasOwn(RANGES, name) ? /** @type {Range} */ (name) : "hour";
}

/** The query of a range's points up to `now`: `from` that many steps back, so the last point holds `now`. @param {Range} range @param {number} now */
export function seriesQuery(range, now) {
  const { step, points } = RANGES[range];
  return new URLSearchParams({ from: String(now - (points - 1) * step), to: String(now), step: String(step) });
}

/**
 * The range buttons, the one shown pressed; a click goes to `hrefOf(range)`, so the range is in the URL.
 * @param {Range} current
 * @param {(range: Range) => string} hrefOf
 */
export function rangeButtons(current, hrefOf) {
  return h("div", { class: "ranges", role: "group", "aria-label": "Range of the charts" },
    /** @type {Range[]} */ (Object.keys(RANGES)).map((range) => h("button", {
      type: "button", class: range === current ? null : "secondary", "aria-pressed": String(range === current), "data-range": range,
      onclick: () => { location.hash = hrefOf(range); },
    }, RANGES[range].label)));
}

/** The smallest of 1, 2, 5 times a power of ten that is at least `raw`, and at least 1: counts are whole. @param {number} raw */
function countStep(raw) {
  if (raw <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw) ?? 10 * power;
}

/** The ticks of the times' axis, in ms: their scale is logarithmic, so that 30 ms and 5 s both read on one chart. */
const TIME_TICKS = [1, 10, 100, 1_000, 10_000, MINUTE, 10 * MINUTE, 60 * MINUTE, DAY, 10 * DAY];
/** A tick's duration as the page writes durations, without its zeros: "1 s", "1 min", "1 h" (not "1.00 s", "1 min 00 s"). @param {number} ms */
const tickDuration = (ms) => duration(ms).replace(/\.0+ s$/, " s").replace(/ 0+ (s|min|h)$/, "");

/** @param {Count} count @returns {Line} */
const counted = (count) => ({ id: count, label: count, value: (point) => point[count] });
/** @param {"wait" | "run"} which @param {"p50" | "p99"} quantile @returns {Line} */
const timed = (which, quantile) => ({ id: `${which}-${quantile}`, label: `${which} ${quantile}`, value: (point) => point[which][quantile] });
const totals = (/** @type {string[]} */ parts) => `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)} in all`;

/** The three charts: what each draws, how, and how its numbers read. @type {Chart[]} */
const CHARTS = [
  { id: "throughput", title: "Jobs in and out", kind: "bars", lines: [counted("enqueued"), counted("completed")],
    format: String, tick: String, summary: totals },
  { id: "failures", title: "Failures", kind: "stacked", lines: /** @type {Count[]} */ (["failed", "expired", "dead", "refused"]).map(counted),
    format: String, tick: String, summary: totals },
  { id: "times", title: "Wait and run time of completed jobs", kind: "lines", lines: [timed("wait", "p50"), timed("wait", "p99"), timed("run", "p50"), timed("run", "p99")],
    format: duration, tick: tickDuration, summary: (parts) => parts.length ? `at most ${parts.join(", ")}` : "no job completed" },
];

/** The three charts of a series answer, as figures. @param {Series} series @param {Range} range */
export function charts(series, range) {
  return CHARTS.map((chart) => figure(chart, series, range));
}

const WIDTH = 360;
const HEIGHT = 190;
/** Where the points go, inside the SVG: the value ticks on the left, the time ticks below. */
const PLOT = { left: 48, top: 8, width: 300, height: 156 };

/** @param {Chart} chart @param {Series} series @param {Range} range */
function figure(chart, series, range) {
  const label = `${chart.title}, ${RANGES[range].per}: ${chart.summary(summaryParts(chart, series.points))}.`;
  const scale = scaleOf(chart, series);
  return h("figure", { class: "chart", id: `chart-${chart.id}` },
    h("figcaption", {}, h("h3", {}, chart.title), legend(chart)),
    svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": label, class: "plot" },
      svg("title", {}, label),
      notKept(series, scale),
      valueAxis(chart, scale),
      timeAxis(series, scale),
      chart.lines.map((line, index) => svg("g", { class: `series series-${line.id}`, "data-series": line.id }, draw(chart, line, index, series, scale)))));
}

/** The chart's series, each with its colour (and its dash, for the lines). @param {Chart} chart */
function legend(chart) {
  return h("ul", { class: "legend-list" }, chart.lines.map((line) =>
    h("li", { class: `series series-${line.id}` }, h("span", { class: `swatch ${chart.kind === "lines" ? "line" : "box"}`, "aria-hidden": "true" }), line.label)));
}

/** For counts, each series' total ("3 enqueued"); for times, the most each series reached. @param {Chart} chart @param {Point[]} points */
function summaryParts(chart, points) {
  return chart.lines.flatMap((line) => {
    const values = points.map(line.value).filter((value) => value !== null);
    if (chart.kind !== "lines") return [`${values.reduce((sum, value) => sum + value, 0)} ${line.label}`];
    return values.length ? [`${line.label} ${duration(Math.max(...values))}`] : [];
  });
}

/**
 * @typedef {{ x: (at: number) => number, y: (value: number) => number, slot: number, ticks: number[], from: number, end: number }} Scale
 * @param {Chart} chart @param {Series} series @returns {Scale}
 */
function scaleOf(chart, series) {
  const { points, step } = series;
  const from = points[0]?.at ?? series.from;
  const end = from + points.length * step;
  const heights = points.flatMap((point) => chart.kind === "stacked"
    ? [chart.lines.reduce((sum, line) => sum + (line.value(point) ?? 0), 0)]
    : chart.lines.map((line) => line.value(point)).filter((value) => value !== null));
  return {
    ...(chart.kind === "lines" ? timesAxis(heights) : countsAxis(Math.max(0, ...heights))),
    x: (at) => PLOT.left + ((at - from) / (end - from)) * PLOT.width,
    slot: PLOT.width / Math.max(1, points.length),
    from, end,
  };
}

/** A linear axis from 0, about four ticks of a round count, its top at least 1. @param {number} highest */
function countsAxis(highest) {
  const tick = countStep(highest / 4);
  const top = Math.max(tick, Math.ceil(highest / tick) * tick);
  return {
    y: (/** @type {number} */ value) => PLOT.top + PLOT.height * (1 - value / top),
    ticks: Array.from({ length: Math.round(top / tick) + 1 }, (_, i) => i * tick),
  };
}

/** A logarithmic axis from the tick at or below the least time to the one at or above the most; 0 ms sits on its floor. @param {number[]} times */
function timesAxis(times) {
  const least = Math.min(...times, 100);
  const most = Math.max(...times, 1_000);
  const bottom = TIME_TICKS.findLast((tick) => tick <= least) ?? 1;
  const top = TIME_TICKS.find((tick) => tick >= most) ?? TIME_TICKS[TIME_TICKS.length - 1];
  const span = Math.log10(top / bottom);
  return {
    y: (/** @type {number} */ value) => PLOT.top + PLOT.height * (1 - Math.log10(Math.max(value, bottom) / bottom) / span),
    ticks: TIME_TICKS.filter((tick) => tick >= bottom && tick <= top),
  };
}

/** The value ticks: a grid line and its number, from 0 to the top. @param {Chart} chart @param {Scale} scale */
function valueAxis(chart, scale) {
  return svg("g", { class: "axis values" }, scale.ticks.flatMap((value) => [
    svg("line", { class: value === scale.ticks[0] ? "base" : "grid", x1: PLOT.left, x2: PLOT.left + PLOT.width, y1: scale.y(value), y2: scale.y(value) }),
    svg("text", { x: PLOT.left - 6, y: scale.y(value) + 4, "text-anchor": "end" }, chart.tick(value)),
  ]));
}

/** Where the time ticks may go, at most five a chart: minutes, hours, then days. */
const TICK_EVERY = [5, 10, 15, 30, 60, 120, 180, 360, 720].map((m) => m * MINUTE).concat([1, 2, 7, 14].map((d) => d * DAY));
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** The time ticks, on round times of the reader's clock: "09:15", or "30 Nov" when a tick is a day or more. @param {Series} series @param {Scale} scale */
function timeAxis(series, scale) {
  const { from, end } = scale;
  const every = TICK_EVERY.find((t) => (end - from) / t <= 5) ?? 14 * DAY;
  const local = -new Date(from).getTimezoneOffset() * MINUTE;
  const ticks = [];
  for (let at = Math.ceil((from + local) / every) * every - local; at < end; at += every) {
    // A label too near the right edge would be cut off.
    if (scale.x(at) <= PLOT.left + PLOT.width - 16) ticks.push(at);
  }
  const y = PLOT.top + PLOT.height;
  return svg("g", { class: "axis times", "data-points": series.points.length }, ticks.flatMap((at) => [
    svg("line", { class: "tick", x1: scale.x(at), x2: scale.x(at), y1: y, y2: y + 4 }),
    svg("text", { x: scale.x(at), y: y + 16, "text-anchor": "middle" }, every < DAY ? clock(at) : day(at)),
  ]));
}

/** The steps before the server's rows begin (`keptFrom`): their zeros are not counts, so they are greyed. @param {Series} series @param {Scale} scale */
function notKept(series, scale) {
  if (series.keptFrom <= scale.from) return null;
  const x = scale.x(Math.min(series.keptFrom, scale.end));
  return svg("rect", { class: "not-kept", x: PLOT.left, y: PLOT.top, width: x - PLOT.left, height: PLOT.height },
    svg("title", {}, `Not kept: the server keeps these steps' rows from ${day(series.keptFrom)} ${clock(series.keptFrom)}`));
}

/** One series' marks: a bar a step, a bar on the ones below it, or a line broken where a step has no value. @param {Chart} chart @param {Line} line @param {number} index @param {Series} series @param {Scale} scale */
function draw(chart, line, index, series, scale) {
  const mark = (/** @type {Point} */ point, /** @type {number} */ value, /** @type {Record<string, number>} */ shape) =>
    svg(chart.kind === "lines" ? "circle" : "rect", { ...shape, class: chart.kind === "lines" ? "dot" : "bar", "data-at": point.at, "data-value": value },
      svg("title", {}, `${when(point.at, series.step)} ${line.label}: ${chart.format(value)}`));
  if (chart.kind === "lines") {
    const drawn = series.points.flatMap((point) => { const value = line.value(point); return value === null ? [] : [{ point, value }]; });
    return [svg("path", { class: "line", d: linePath(line, series, scale) }),
      ...drawn.map(({ point, value }) => mark(point, value, { cx: centre(point, scale), cy: scale.y(value), r: 2 }))];
  }
  const width = chart.kind === "bars" ? (scale.slot * 0.8) / chart.lines.length : scale.slot * 0.8;
  return series.points.map((point) => {
    const value = line.value(point) ?? 0;
    const below = chart.kind === "stacked" ? chart.lines.slice(0, index).reduce((sum, other) => sum + (other.value(point) ?? 0), 0) : 0;
    const x = scale.x(point.at) + scale.slot * 0.1 + (chart.kind === "bars" ? index * width : 0);
    return mark(point, value, { x, width, y: scale.y(below + value), height: scale.y(below) - scale.y(below + value) });
  });
}

/** The path of a line through its steps' centres, lifted at each step without a value (no job completed then). @param {Line} line @param {Series} series @param {Scale} scale */
function linePath(line, series, scale) {
  let path = "";
  let drawing = false;
  for (const point of series.points) {
    const value = line.value(point);
    if (value !== null) path += `${drawing ? "L" : "M"}${centre(point, scale).toFixed(1)} ${scale.y(value).toFixed(1)}`;
    drawing = value !== null;
  }
  return path;
}

/** @param {Point} point @param {Scale} scale */
const centre = (point, scale) => scale.x(point.at) + scale.slot / 2;

const pad = (/** @type {number} */ n) => String(n).padStart(2, "0");
/** @param {number} at */
const clock = (at) => `${pad(new Date(at).getHours())}:${pad(new Date(at).getMinutes())}`;
/** @param {number} at */
const day = (at) => `${new Date(at).getDate()} ${MONTHS[new Date(at).getMonth()]}`;
/** A step as a pointer's title names it: its day, and its time when a step is shorter than a day. @param {number} at @param {number} step */
const when = (at, step) => (step < DAY ? `${day(at)} ${clock(at)}` : day(at));
