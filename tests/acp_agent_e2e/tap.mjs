// A tap on an ACP agent's stdio, for measuring what happens on the wire inside a real session:
// `node tap.mjs PROGRAM ARGS…` runs the agent, passes every line between rawko and it through
// unchanged, and appends each line to the file $RAWKO_TAP_LOG as one JSON object
// `{"t": <ms since the tap started>, "dir": "in" | "out", "line": "<the message>"}` ("in": rawko
// to the agent, "out": the agent to rawko). Its stderr is the agent's. It ends with the agent.
import { spawn } from "node:child_process";
import { openSync, writeSync } from "node:fs";
import { createInterface } from "node:readline";

const [program, ...args] = process.argv.slice(2);
const log = openSync(process.env.RAWKO_TAP_LOG, "a");
const record = (dir, line) =>
  writeSync(log, JSON.stringify({ t: performance.now(), dir, line }) + "\n");

const agent = spawn(program, args, { stdio: ["pipe", "pipe", "inherit"] });
createInterface({ input: process.stdin })
  .on("line", (line) => {
    record("in", line);
    agent.stdin.write(line + "\n");
  })
  .on("close", () => agent.stdin.end());
createInterface({ input: agent.stdout }).on("line", (line) => {
  record("out", line);
  process.stdout.write(line + "\n");
});
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => agent.kill(signal));
}
agent.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
