/**
 * What the web face's test (run.mjs) and measurements (measure.mjs) share: a workspace in a
 * temporary directory (a git repository with a workflow and a script for the scripted agent),
 * fresh XDG directories, starting `rawko web` and reading the URL it prints, HTTP requests
 * with full control of the headers, waiting for a condition with a time limit, and stopping
 * what was started.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

export const RAWKO_BIN = process.env.RAWKO_BIN || path.resolve(HERE, '../../target/debug/rawko');
export const REPO = process.env.REPO || path.resolve(HERE, '../..');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const ARTIFACTS = path.resolve(process.env.ARTIFACTS || path.join(HERE, 'artifacts'));

export function log(line) {
  process.stdout.write(`${line}\n`);
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` until it returns a truthy value, which it returns; throws naming `what` after `timeoutMs`. */
export async function waitUntil(what, timeoutMs, probe, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${last.message})` : ''}`);
    }
    await sleep(everyMs);
  }
}

/** A fresh temporary root, removed by the returned cleanup. */
export function tempRoot(prefix) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return root;
}

/**
 * A workspace under `root`: a git repository with a README, the workflow `webtest`
 * (Plan: read-only, Build: Read only, Check: anything) and the scripted agent's `script`.
 * Returns its paths and the environment for rawko (its own home and XDG directories).
 */
export function makeWorkspace(root, name, script) {
  const ws = path.join(root, name, 'ws');
  const home = path.join(root, name, 'home');
  fs.mkdirSync(ws, { recursive: true });
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(ws, 'README.md'), '# greet\n\nSays hello.\n');
  const flow = path.join(ws, '.rawko/workflows/webtest');
  fs.mkdirSync(flow, { recursive: true });
  fs.writeFileSync(
    path.join(flow, 'workflow.yaml'),
    [
      'name: Web Test',
      'commandName: webtest',
      'initialMessage: |',
      '  Do this: {description}',
      '',
      '  Start with the {firstPhaseEmoji} {firstPhaseName} phase.',
      'phases:',
      '  - plan.md',
      '  - build.md',
      '  - check.md',
      'roleInstruction: >-',
      '  You work through the {workflowName} workflow one phase at a time. Call workflow_step when',
      '  the phase is done.',
      '',
    ].join('\n'),
  );
  const phase = (id, title, emoji, tools, body) =>
    fs.writeFileSync(
      path.join(flow, `${id}.md`),
      ['---', `id: ${id}`, `name: ${title}`, `emoji: ${emoji}`, ...(tools ? ['tools:', `  whitelist: [${tools.join(', ')}]`] : []), '---', body, ''].join('\n'),
    );
  phase('plan', 'Plan', '📋', ['Read', 'Glob', 'Grep'], 'Read the code and write a plan in your reply. Change no file.');
  phase('build', 'Build', '🛠️', ['Read'], 'Carry out the plan: {description}');
  phase('check', 'Check', '🔎', null, 'Check the work.');
  const scriptFile = path.join(root, name, 'script.yaml');
  fs.writeFileSync(scriptFile, script);
  const git = spawnSync('git', ['init', '-q'], { cwd: ws, encoding: 'utf8' });
  if (git.status !== 0) throw new Error(`git init failed: ${git.stderr}`);
  const env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local/share'),
    XDG_STATE_HOME: path.join(home, '.local/state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_RUNTIME_DIR: path.join(home, 'run'),
    PI_CODING_AGENT_DIR: path.join(home, '.pi/agent'),
    RAWKO_LOG: process.env.RAWKO_LOG || 'warn,rawko=debug',
  };
  fs.mkdirSync(env.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });
  return { ws, home, script: scriptFile, env };
}

/** Sends `signal` to the process group of `child` (started detached, so its children go too). */
function killGroup(child, signal) {
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // Gone already.
    }
  }
}

/** Stops `child` with SIGTERM, then SIGKILL after 5 s. */
export async function stopProcess(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', () => resolve()));
  killGroup(child, 'SIGTERM');
  const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts `rawko web --workspace WS --provider scripted --script SCRIPT` (stderr into `logFile`)
 * and reads the one line it prints on stdout. Returns the process, the URL with its token, the
 * origin and the token.
 */
export async function startWeb(space, logFile, extra = []) {
  const args = ['web', '--workspace', space.ws, '--provider', 'scripted', '--script', space.script, ...extra];
  const child = spawn(RAWKO_BIN, args, {
    cwd: space.ws,
    env: space.env,
    detached: true,
    stdio: ['ignore', 'pipe', fs.openSync(logFile, 'a')],
  });
  let stdout = '';
  const line = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`rawko web printed no URL in 30 s; stdout: ${JSON.stringify(stdout)}`)), 30_000);
    child.stdout.on('data', (chunk) => {
      stdout += chunk.toString();
      const nl = stdout.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        resolve(stdout.slice(0, nl));
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`rawko web exited (${code ?? signal}) before printing its URL; see ${logFile}`));
    });
  });
  return { child, stdoutLine: line, stdout: () => stdout, ...parseUrlLine(line) };
}

/** `rawko web: http://HOST:PORT/?token=TOKEN` → its URL, origin and token. */
export function parseUrlLine(line) {
  const match = /^rawko web: (https?:\/\/\S+)$/.exec(line.trim());
  if (!match) throw new Error(`not the URL line: ${JSON.stringify(line)}`);
  const url = new URL(match[1]);
  const token = url.searchParams.get('token');
  if (!token) throw new Error(`the URL has no token: ${line}`);
  return { url: url.href, origin: url.origin, token };
}

/**
 * One HTTP request with exactly these headers (node's fetch adds and refuses some); resolves
 * with the status, the headers and the body (the first 64 KiB; an event stream is cut off
 * after its first chunk).
 */
export function request(urlText, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const url = new URL(urlText);
    const req = http.request(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers },
      (res) => {
        let data = '';
        const done = () => {
          resolve({ status: res.statusCode, headers: res.headers, body: data });
          req.destroy();
        };
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          data += chunk;
          if (String(res.headers['content-type']).startsWith('text/event-stream') || data.length > 65536) done();
        });
        res.on('end', done);
        res.on('error', done);
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${urlText}: no answer in 10 s`)));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** The cookie header value from a `Set-Cookie` header (its first `name=value`). */
export function cookieOf(setCookie) {
  const first = Array.isArray(setCookie) ? setCookie[0] : setCookie;
  return String(first || '').split(';')[0];
}

/** Visits `/?token=` and returns the cookie the server sets. */
export async function signIn(server) {
  const res = await request(server.url);
  if (res.status !== 303) throw new Error(`GET /?token= answered ${res.status}, not 303`);
  return cookieOf(res.headers['set-cookie']);
}

/** GET an API path with the cookie; the parsed JSON. */
export async function apiGet(server, cookie, apiPath) {
  const res = await request(server.origin + apiPath, { headers: { Cookie: cookie, Accept: 'application/json' } });
  if (res.status !== 200) throw new Error(`GET ${apiPath} answered ${res.status}: ${res.body.slice(0, 200)}`);
  return JSON.parse(res.body);
}

/** POST JSON to an API path with the cookie and the server's own Origin. */
export async function apiPost(server, cookie, apiPath, value) {
  const body = JSON.stringify(value);
  return request(server.origin + apiPath, {
    method: 'POST',
    headers: {
      Cookie: cookie,
      Origin: server.origin,
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(body),
    },
    body,
  });
}
