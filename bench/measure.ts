// What every scenario of `npm run bench` shares: the results of this run, the
// baselines each is compared with, the clock helpers, and the closing table
// and bench/results.json.
import { writeFileSync } from "node:fs";

export type Result = {
  name: string;
  unit: string;
  opsPerSec: number;
  p50Ms?: number;
  p99Ms?: number;
  /** Throughput as a multiple of each baseline's, from this same run. */
  ratios?: Record<string, number>;
  /** The target: at least `min` × the throughput of `of`; `met` stays unset when `of` was not measured. */
  target?: { of: string; min: number; met?: boolean };
  note?: string;
};
/** The baselines each scenario is compared with. */
export const BASELINES: Record<string, string[]> = {};
export const results: Result[] = [];

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
}

// libSQL answers a local statement at once, so a loop of awaits never lets the
// event loop turn; but the native side of each prepared statement is freed by a
// finalizer that runs only when it does (tursodatabase/libsql-js#153). Without
// a turn now and then, such a loop grows by ~100 KB per cycle: 24 GB in a full run.
export const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `cycle(i)` for i in [0, n), one after the other; answers cycles per second and the latency percentiles. */
export async function timed(n: number, cycle: (i: number) => Promise<unknown>) {
  const latencies = new Float64Array(n);
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    if (i % 100 === 99) await turn();
    const t = performance.now();
    await cycle(i);
    latencies[i] = performance.now() - t;
  }
  const seconds = (performance.now() - start) / 1000;
  const sorted = Array.from(latencies).sort((a, b) => a - b);
  return { opsPerSec: n / seconds, p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99) };
}

/** The median trial by throughput (of an odd number of trials). */
export const median = <T extends { opsPerSec: number }>(trials: T[]): T => [...trials].sort((a, b) => a.opsPerSec - b.opsPerSec)[Math.floor(trials.length / 2)]!;

/** 1k, 100k, 1M. */
export const label = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1_000}k`);

export type Machine = { cores: number; cpu: string; node: string };

/** Fills in the ratios and targets, prints the table to stdout, and writes bench/results.json. */
export function report(machine: Machine, quick: boolean, seconds: number): void {
  const byName = new Map(results.map((result) => [result.name, result]));
  for (const result of results) {
    const baselines = (BASELINES[result.name] ?? []).filter((of) => byName.has(of));
    if (baselines.length > 0) result.ratios = Object.fromEntries(baselines.map((of) => [of, result.opsPerSec / byName.get(of)!.opsPerSec]));
    const of = result.target && byName.get(result.target.of);
    if (result.target && of) result.target.met = result.opsPerSec / of.opsPerSec >= result.target.min;
  }
  const fmt = (value: number | undefined, digits = 2) => (value === undefined || Number.isNaN(value) ? "" : value.toFixed(digits));
  const verdict = (met: boolean | undefined) => (met === undefined ? "not measured" : met ? "met" : "MISSED");
  const rows = results.map((r) => [
    r.name, `${Math.round(r.opsPerSec).toLocaleString("en")} ${r.unit}`, fmt(r.p50Ms), fmt(r.p99Ms),
    Object.entries(r.ratios ?? {}).map(([of, ratio]) => `${fmt(ratio)} × ${of}`).join(", "),
    r.target === undefined ? "" : `>= ${r.target.min} × ${r.target.of}: ${verdict(r.target.met)}`,
  ]);
  const header = ["scenario", "throughput", "p50 ms", "p99 ms", "ratios", "target"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`;
  console.log(`\n${machine.cores} cores (${machine.cpu}), Node ${machine.node}${quick ? ", --quick" : ""}, ${seconds.toFixed(0)} s`);
  console.log([line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n"));

  const file = new URL("./results.json", import.meta.url);
  writeFileSync(file, `${JSON.stringify(results.map((r) => ({ ...r, ...machine, quick, date: new Date().toISOString() })), null, 2)}\n`);
  console.error(`\nwrote ${file.pathname}`);
}
