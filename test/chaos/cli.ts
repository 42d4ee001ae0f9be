// `npm run test:chaos`: one chaos run at full size, its counts, and exit 1 on any violation.
//   npm run test:chaos -- --workers 8 --jobs 2000 --ttl 500 --kills 6 --restarts 2 --seed 42 --keep [--no-group-commit] [--in-process 4]
import { parseArgs } from "node:util";
import { DEFAULT_CHAOS, describeReport, runChaos } from "./run.ts";

const { values } = parseArgs({
  options: {
    workers: { type: "string" },
    "in-process": { type: "string" },
    jobs: { type: "string" },
    ttl: { type: "string" },
    kills: { type: "string" },
    restarts: { type: "string" },
    seed: { type: "string" },
    dir: { type: "string" },
    keep: { type: "boolean" },
    "no-group-commit": { type: "boolean" },
  },
});
const number = (value: string | undefined, fallback: number) => (value === undefined ? fallback : Number(value));
const report = await runChaos({
  workers: number(values.workers, DEFAULT_CHAOS.workers),
  inProcessWorkers: number(values["in-process"], 0),
  jobs: number(values.jobs, DEFAULT_CHAOS.jobs),
  ttlMs: number(values.ttl, DEFAULT_CHAOS.ttlMs),
  workerKills: number(values.kills, DEFAULT_CHAOS.workerKills),
  serverRestarts: number(values.restarts, DEFAULT_CHAOS.serverRestarts),
  seed: number(values.seed, Math.floor(Math.random() * 1e6)),
  dir: values.dir,
  keep: values.keep,
  groupCommit: !values["no-group-commit"],
  log: (line) => console.log(line),
});
for (const line of describeReport(report)) console.log(line);
process.exit(report.violations.length === 0 ? 0 : 1);
