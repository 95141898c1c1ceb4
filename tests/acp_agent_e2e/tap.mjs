// A tap on the ACP connection between rawko and an agent, for measuring inside a session: runs
// the agent (the command after the log path), passes every line between rawko and it unchanged,
// and appends each message's time, direction and JSON-RPC head (id, method, whether it is a
// response) to the log, a JSON object a line. No dependencies; rawko starts it as the agent, so
// it runs confined as the agent would.
//
//   node tap.mjs LOG PROGRAM ARGS...

import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [log, program, ...args] = process.argv.slice(2);
const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'inherit'] });

function record(from, line) {
  const t = performance.timeOrigin + performance.now();
  let head = { bad: true };
  try {
    const m = JSON.parse(line);
    head = { id: m.id, method: m.method, response: m.method === undefined, error: m.error !== undefined };
    if (m.method === 'session/request_permission') head.tool = m.params?.toolCall?.title;
  } catch {}
  appendFileSync(log, JSON.stringify({ pid: process.pid, t, from, ...head }) + '\n');
}

createInterface({ input: process.stdin }).on('line', (line) => {
  record('client', line);
  child.stdin.write(line + '\n');
});
process.stdin.on('end', () => child.stdin.end());
createInterface({ input: child.stdout }).on('line', (line) => {
  record('agent', line);
  process.stdout.write(line + '\n');
});
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => child.kill(s));
