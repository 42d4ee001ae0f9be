#!/usr/bin/env node
// The `fencelease` command. Everything it does is in run.ts; this only wires it to the process.
import { run } from "./run.ts";

process.exitCode = await run(process.argv.slice(2), {
  out: (line) => console.log(line),
  err: (line) => console.error(line),
  env: process.env,
  stdin: async () => {
    let text = "";
    for await (const chunk of process.stdin.setEncoding("utf8")) text += chunk;
    return text;
  },
});
