// `rawko acp` driven by a client no one here wrote: the official ACP TypeScript SDK's client app
// (`client()`, pinned in package.json). Each scenario starts the real binary ($RAWKO_BIN)
// over pipes in a fresh workspace with a scripted provider, and checks what the SDK hands the
// client: modes, plan updates, streamed chunks, permission requests and their effect on disk,
// cancel, session/load after a SIGKILL, the client's fs and terminal methods serving rawko's
// Read, Write, Edit and Bash (still gated, still confined), lines rawko cannot read and an
// editor that does not answer (each fails alone; the session goes on), the order of updates
// before a request, config options, session/list, resume and close, session_info_update,
// $/cancel_request both ways, and usage_update.
//
//   RAWKO_BIN=target/debug/rawko node tests/acp/e2e.mjs [name-filter]
//
// The last line is `N passed, N failed`.

import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync, rmSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';

const RAWKO = process.env.RAWKO_BIN;
if (!RAWKO || !existsSync(RAWKO)) {
  console.error(`error: RAWKO_BIN must name the rawko binary (got ${RAWKO ?? 'nothing'})`);
  process.exit(2);
}
const LIMIT_MS = 20_000;

// --- a workspace ---------------------------------------------------------------------------

const WORKFLOW = `name: Feature
commandName: feature
initialMessage: "Implement: {description}"
phases:
  - plan.md
  - build.md
`;
const PLAN = `---
id: plan
name: Plan
emoji: "📋"
tools:
  whitelist: [Read, Glob, Grep]
---
Read only. Then call workflow_step.
`;
const BUILD = `---
id: build
name: Build
emoji: "🔨"
---
Write the code. Then call workflow_step.
`;

/**
 * A fresh workspace with the workflow, a scripted provider playing `script`, and its own XDG dirs.
 * `extra` is added to the workspace's settings; `providers` replaces the user's providers.
 */
const roots = [];
function workspace(script, extra = {}, providers = [{ name: 'scripted', script: '.rawko/script.yaml' }]) {
  const root = mkdtempSync(join(tmpdir(), 'rawko-acp-'));
  roots.push(root);
  const ws = join(root, 'project');
  const files = {
    '.rawko/workflows/feature/workflow.yaml': WORKFLOW,
    '.rawko/workflows/feature/plan.md': PLAN,
    '.rawko/workflows/feature/build.md': BUILD,
    '.rawko/script.yaml': script,
    '.rawko/config.json': JSON.stringify({
      countdownSeconds: 1,
      approvalTimeoutSeconds: 30,
      ...extra,
    }),
    'README.md': 'A tiny project.\n',
  };
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(ws, rel)), { recursive: true });
    writeFileSync(join(ws, rel), text);
  }
  const env = {
    PATH: process.env.PATH,
    HOME: join(root, 'home'),
    XDG_CONFIG_HOME: join(root, 'config'),
    XDG_STATE_HOME: join(root, 'state'),
    XDG_RUNTIME_DIR: join(root, 'run'),
    TMPDIR: join(root, 'tmp'),
    RUST_LOG: 'warn',
  };
  for (const d of [env.HOME, env.XDG_CONFIG_HOME, env.XDG_STATE_HOME, env.XDG_RUNTIME_DIR, env.TMPDIR]) {
    mkdirSync(d, { recursive: true, mode: 0o700 });
  }
  // The provider is the user's setting: a workspace's `providers` apply only once it is trusted.
  mkdirSync(join(env.XDG_CONFIG_HOME, 'rawko'), { recursive: true });
  writeFileSync(
    join(env.XDG_CONFIG_HOME, 'rawko', 'config.json'),
    JSON.stringify({ providers }),
  );
  return { root, ws, env };
}

// --- the client -----------------------------------------------------------------------------

/**
 * Starts `rawko acp` and connects the SDK's client app to it. `policy.permission` chooses the
 * option for each permission request; `fs`/`terminal` say which client capabilities the client
 * offers (served for real, inside the workspace). Every message rawko sends is also recorded as
 * it arrives (`arrivals`), before the SDK dispatches it, so a scenario can assert their order.
 */
function connect(place, policy = {}) {
  const child = spawn(RAWKO, ['acp'], { cwd: place.ws, env: place.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const updates = [];
  const permissions = [];
  const fsCalls = [];
  const arrivals = [];
  const cancelled = [];
  const terminals = new Map();
  const waiters = [];
  const notify = () => {
    for (const w of [...waiters]) {
      if (w.test()) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  // A request rawko gave up on: the SDK aborts the handler's signal when `$/cancel_request` for
  // it arrives.
  const watchCancel = (method, signal, extra = {}) =>
    signal.addEventListener('abort', () => {
      cancelled.push({ method, ...extra });
      notify();
    });
  const app = client({ name: 'rawko-e2e' })
    .onNotification(methods.client.session.update, ({ params }) => {
      updates.push(params.update);
      notify();
    })
    .onRequest(methods.client.session.requestPermission, async ({ params, signal }) => {
      permissions.push(params);
      watchCancel('session/request_permission', signal, { toolCallId: params.toolCall.toolCallId });
      notify();
      const choice = policy.permission ? policy.permission(params, permissions.length) : 'reject_once';
      // An editor whose user never answers: the prompt stays until rawko withdraws it.
      if (choice === 'never') {
        await new Promise((res) => signal.addEventListener('abort', res));
        return { outcome: { outcome: 'cancelled' } };
      }
      if (choice === 'cancelled') return { outcome: { outcome: 'cancelled' } };
      const option = params.options.find((o) => o.kind === choice);
      return { outcome: { outcome: 'selected', optionId: option.optionId } };
    })
    .onRequest(methods.client.fs.readTextFile, async ({ params, signal }) => {
      fsCalls.push({ method: 'read', path: params.path });
      watchCancel('fs/read_text_file', signal, { path: params.path });
      notify();
      // An editor that never answers.
      if (policy.silentRead) return new Promise(() => {});
      // An "unsaved buffer" the editor holds for a file, if the scenario gave one.
      if (policy.buffers && params.path in policy.buffers) return { content: policy.buffers[params.path] };
      return { content: readFileSync(params.path, 'utf8') };
    })
    .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
      fsCalls.push({ method: 'write', path: params.path });
      writeFileSync(params.path, params.content);
      notify();
      return {};
    })
    .onRequest(methods.client.terminal.create, async ({ params }) => {
      const id = `term-${terminals.size + 1}`;
      const env = { ...place.env, ...Object.fromEntries((params.env ?? []).map((v) => [v.name, v.value])) };
      const proc = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? place.ws, env, shell: false });
      const t = { output: '', exit: null, proc };
      proc.stdout.on('data', (d) => (t.output += d));
      proc.stderr.on('data', (d) => (t.output += d));
      t.done = new Promise((res) => proc.on('close', (code, signal) => res((t.exit = { exitCode: code, signal }))));
      terminals.set(id, t);
      fsCalls.push({ method: 'terminal', id, command: params.command, args: params.args ?? [] });
      notify();
      return { terminalId: id };
    })
    .onRequest(methods.client.terminal.output, async ({ params }) => {
      const t = terminals.get(params.terminalId);
      return { output: t.output, truncated: false, exitStatus: t.exit ?? undefined };
    })
    .onRequest(methods.client.terminal.waitForExit, async ({ params }) => await terminals.get(params.terminalId).done)
    .onRequest(methods.client.terminal.kill, async ({ params }) => {
      fsCalls.push({ method: 'kill', id: params.terminalId });
      notify();
      // As editors do: the command gets SIGTERM (rawko's helper ends everything below it).
      terminals.get(params.terminalId).proc.kill('SIGTERM');
      return {};
    })
    .onRequest(methods.client.terminal.release, async ({ params }) => {
      const t = terminals.get(params.terminalId);
      fsCalls.push({ method: 'release', id: params.terminalId, output: t?.output, exit: t?.exit });
      notify();
      if (t && t.exit === null) t.proc.kill('SIGTERM');
      terminals.delete(params.terminalId);
      return {};
    });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const tapped = {
    writable: stream.writable,
    readable: stream.readable.pipeThrough(
      new TransformStream({
        transform(message, out) {
          arrivals.push(message);
          out.enqueue(message);
        },
      }),
    ),
  };
  const connection = app.connect(tapped);
  const agent = connection.agent;
  const a = methods.agent;
  // The agent's methods under the names the scenarios use.
  const conn = {
    initialize: (p) => agent.request(a.initialize, p),
    newSession: (p) => agent.request(a.session.new, p),
    loadSession: (p) => agent.request(a.session.load, p),
    resumeSession: (p) => agent.request(a.session.resume, p),
    closeSession: (p) => agent.request(a.session.close, p),
    listSessions: (p) => agent.request(a.session.list, p),
    setSessionMode: (p) => agent.request(a.session.setMode, p),
    setConfigOption: (p) => agent.request(a.session.setConfigOption, p),
    prompt: (p, options) => agent.request(a.session.prompt, p, options),
    cancel: (p) => agent.notify(a.session.cancel, p),
  };
  const exited = new Promise((res) => child.on('exit', (code, signal) => res({ code, signal })));
  return {
    child,
    conn,
    updates,
    permissions,
    fsCalls,
    arrivals,
    cancelled,
    exited,
    stderr: () => stderr,
    /** Resolves once `test()` holds (checked after each update or request), or fails after LIMIT_MS. */
    until(what, test) {
      if (test()) return Promise.resolve();
      return withLimit(new Promise((resolve) => waiters.push({ test, resolve })), `${what}\n${stderr}`);
    },
    async close() {
      child.stdin.end();
      const t = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(t);
      connection.close();
    },
  };
}

function withLimit(promise, what) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${LIMIT_MS} ms waiting for ${what}`)), LIMIT_MS);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

async function start(place, policy, capabilities = {}) {
  const c = connect(place, policy);
  const init = await withLimit(
    c.conn.initialize({
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: {
        fs: { readTextFile: !!capabilities.fs, writeTextFile: !!capabilities.fs },
        terminal: !!capabilities.terminal,
      },
    }),
    'initialize',
  );
  return { c, init };
}

const text = (updates, kind) =>
  updates
    .filter((u) => u.sessionUpdate === kind)
    .map((u) => u.content?.text ?? '')
    .join('');

function assert(cond, message) {
  if (!cond) throw new Error(message);
}

// --- scenarios ------------------------------------------------------------------------------

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

scenario('initialize names rawko and offers session/load, list, resume and close', async () => {
  const place = workspace('turns: []\n');
  const { c, init } = await start(place);
  try {
    assert(init.protocolVersion === PROTOCOL_VERSION, `protocol ${init.protocolVersion}`);
    assert(init.agentInfo?.name === 'rawko', `agentInfo ${JSON.stringify(init.agentInfo)}`);
    assert(init.agentCapabilities?.loadSession === true, 'loadSession capability');
    const caps = init.agentCapabilities?.sessionCapabilities ?? {};
    for (const cap of ['list', 'resume', 'close']) {
      assert(caps[cap] && typeof caps[cap] === 'object', `sessionCapabilities.${cap}: ${JSON.stringify(caps)}`);
    }
  } finally {
    await c.close();
  }
});

scenario('workflows are the session modes; set_mode chooses one', async () => {
  const place = workspace('turns: []\n');
  const { c } = await start(place);
  try {
    const s = await withLimit(c.conn.newSession({ cwd: place.ws, mcpServers: [] }), 'session/new');
    const ids = s.modes.availableModes.map((m) => m.id);
    assert(ids.includes('feature'), `modes ${ids}`);
    assert(ids.length >= 2, `a "no workflow" mode besides the workflows: ${ids}`);
    await withLimit(c.conn.setSessionMode({ sessionId: s.sessionId, modeId: 'feature' }), 'set_mode');
    await c.until('current_mode_update', () =>
      c.updates.some((u) => u.sessionUpdate === 'current_mode_update' && u.currentModeId === 'feature'),
    );
  } finally {
    await c.close();
  }
});

const WORKFLOW_SCRIPT = `turns:
  - text: "Reading first."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Planned."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: Write, input: {path: out.txt, content: "built\\n"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "All done."
`;

scenario('a prompt runs the workflow: plan updates in order, chunks, end_turn', async () => {
  const place = workspace(WORKFLOW_SCRIPT);
  const { c } = await start(place);
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    await c.conn.setSessionMode({ sessionId: s.sessionId, modeId: 'feature' });
    const r = await withLimit(
      c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Build the thing' }] }),
      'the prompt turn',
    );
    assert(r.stopReason === 'end_turn', `stopReason ${r.stopReason}`);
    const said = text(c.updates, 'agent_message_chunk');
    assert(said.includes('Reading first.') && said.includes('All done.'), `chunks: ${said}`);
    const plans = c.updates.filter((u) => u.sessionUpdate === 'plan');
    assert(plans.length >= 2, `plan updates: ${plans.length}`);
    const first = plans[0].entries.map((e) => e.status);
    assert(first[0] === 'in_progress' && first[1] === 'pending', `first plan ${first}`);
    const current = (p) => p.entries.findIndex((e) => e.status === 'in_progress');
    const order = plans.map(current);
    assert(order.every((v, i) => i === 0 || v >= order[i - 1] || v === -1), `plan order ${order}`);
    const last = plans[plans.length - 1].entries.map((e) => e.status);
    assert(last.every((st) => st === 'completed'), `last plan ${last}`);
    const calls = c.updates.filter((u) => u.sessionUpdate === 'tool_call');
    const read = calls.find((u) => u.title?.includes('Read') || u.kind === 'read');
    assert(read && read.kind === 'read', `a read tool call: ${JSON.stringify(calls)}`);
    const write = calls.find((u) => u.kind === 'edit');
    assert(write, `an edit tool call: ${JSON.stringify(calls)}`);
    assert(
      JSON.stringify(write.content ?? []).includes('"diff"') ||
        c.updates.some((u) => u.sessionUpdate === 'tool_call_update' && JSON.stringify(u.content ?? []).includes('"diff"')),
      'the Write shows a diff',
    );
    assert(readFileSync(join(place.ws, 'out.txt'), 'utf8') === 'built\n', 'out.txt written');
    assert(
      c.updates.some((u) => u.sessionUpdate === 'agent_thought_chunk'),
      'context injection as a thought line',
    );
  } finally {
    await c.close();
  }
});

const BLOCKED_SCRIPT = `turns:
  - tool_calls:
      - {name: Write, input: {path: denied.txt, content: "no\\n"}}
  - tool_calls:
      - {name: Write, input: {path: allowed.txt, content: "yes\\n"}}
  - text: "Stopping here."
`;

scenario('a blocked call asks permission; deny keeps the disk, allow writes', async () => {
  const place = workspace(BLOCKED_SCRIPT);
  const answers = ['reject_once', 'allow_once'];
  const { c } = await start(place, { permission: (_p, n) => answers[n - 1] ?? 'reject_once' });
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    await c.conn.setSessionMode({ sessionId: s.sessionId, modeId: 'feature' });
    c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Try writing' }] }).catch(() => {});
    await c.until('two permission requests', () => c.permissions.length >= 2);
    const kinds = c.permissions[0].options.map((o) => o.kind).sort();
    assert(
      JSON.stringify(kinds) === JSON.stringify(['allow_always', 'allow_once', 'reject_always', 'reject_once']),
      `options ${kinds}`,
    );
    const shown = JSON.stringify(c.permissions[0].toolCall);
    assert(/plan/i.test(shown), `the phase in the tool call: ${shown}`);
    await c.until('allowed.txt written', () => existsSync(join(place.ws, 'allowed.txt')));
    assert(!existsSync(join(place.ws, 'denied.txt')), 'denied.txt must not exist');
    await c.conn.cancel({ sessionId: s.sessionId });
  } finally {
    await c.close();
  }
});

const SLOW_SCRIPT = `turns:
  - text: "Thinking for a long time."
    delay_ms: 15000
  - text: "Never seen."
`;

scenario('session/cancel ends the turn with cancelled', async () => {
  const place = workspace(SLOW_SCRIPT);
  const { c } = await start(place);
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    const turn = c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Go slowly' }] });
    await new Promise((r) => setTimeout(r, 300));
    await c.conn.cancel({ sessionId: s.sessionId });
    const r = await withLimit(turn, 'the cancelled turn');
    assert(r.stopReason === 'cancelled', `stopReason ${r.stopReason}`);
  } finally {
    await c.close();
  }
});

scenario('session/load after a SIGKILL replays the conversation and goes on', async () => {
  // The first run is killed while the model "thinks" about its second turn.
  const script = `turns:
  - text: "First turn."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Second turn after the restart."
    delay_ms: 3000
`;
  const place = workspace(script);
  let sessionId;
  {
    const { c } = await start(place);
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    sessionId = s.sessionId;
    c.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'Remember me' }] }).catch(() => {});
    await c.until('the first turn', () => text(c.updates, 'agent_message_chunk').includes('First turn.'));
    await c.until('the Read finished', () =>
      c.updates.some((u) => u.sessionUpdate === 'tool_call_update' && u.status === 'completed'),
    );
    c.child.kill('SIGKILL');
    await c.exited;
  }
  const { c, init } = await start(place);
  try {
    assert(init.agentCapabilities?.loadSession === true, 'loadSession capability');
    await withLimit(c.conn.loadSession({ sessionId, cwd: place.ws, mcpServers: [] }), 'session/load');
    const replayed = text(c.updates, 'agent_message_chunk') + text(c.updates, 'user_message_chunk');
    assert(replayed.includes('First turn.'), `replayed: ${replayed}`);
    assert(replayed.includes('Remember me'), `the user's prompt replayed: ${replayed}`);
    assert(
      c.updates.some((u) => u.sessionUpdate === 'tool_call'),
      'the tool call replayed',
    );
    assert(!text(c.updates, 'agent_message_chunk').includes('Second turn'), 'nothing new before the prompt');
    const r = await withLimit(
      c.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'Go on' }] }),
      'the turn after load',
    );
    assert(r.stopReason === 'end_turn', `stopReason ${r.stopReason}`);
    assert(text(c.updates, 'agent_message_chunk').includes('Second turn'), 'the task went on');
  } finally {
    await c.close();
  }
});

const CLIENT_IO_SCRIPT = `turns:
  - tool_calls:
      - {name: Read, input: {file_path: README.md}}
  - tool_calls:
      - {name: Write, input: {file_path: denied.txt, content: "no\\n"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: Write, input: {file_path: out/built.txt, content: "built\\n"}}
  - tool_calls:
      - {name: Edit, input: {file_path: out/built.txt, old_string: built, new_string: edited}}
  - tool_calls:
      - {name: Bash, input: {command: "echo from-terminal; cat out/built.txt; echo x > \\"$HOME/escape.txt\\"; exit 3"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "All done."
`;

scenario("the client's fs and terminal serve Read, Write, Edit and Bash, gated and confined", async () => {
  const place = workspace(CLIENT_IO_SCRIPT);
  const readme = join(realpathSync(place.ws), 'README.md');
  const { c } = await start(
    place,
    { permission: () => 'reject_once', buffers: { [readme]: 'UNSAVED BUFFER TEXT\n' } },
    { fs: true, terminal: true },
  );
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    await c.conn.setSessionMode({ sessionId: s.sessionId, modeId: 'feature' });
    const r = await withLimit(
      c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Use the editor' }] }),
      'the prompt turn',
    );
    assert(r.stopReason === 'end_turn', `stopReason ${r.stopReason}`);
    const ws = realpathSync(place.ws);
    const built = join(ws, 'out', 'built.txt');
    const calls = c.fsCalls.map((f) => `${f.method} ${f.path ?? f.id}`);
    // Read went to the editor, and the model saw its unsaved buffer.
    assert(calls[0] === `read ${readme}`, `first client call: ${calls}`);
    const updates = JSON.stringify(c.updates.filter((u) => u.sessionUpdate === 'tool_call_update'));
    assert(updates.includes('UNSAVED BUFFER TEXT'), 'the Read result is the editor buffer');
    // The blocked Write was refused by the user: the editor was never asked to write it.
    assert(c.permissions.length === 1, `permissions: ${c.permissions.length}`);
    assert(!calls.some((x) => x.includes('denied.txt')), `denied.txt reached the editor: ${calls}`);
    assert(!existsSync(join(place.ws, 'denied.txt')), 'denied.txt must not exist');
    // Write, then Edit (a read and a write), through the editor.
    assert(calls.includes(`write ${built}`), `the Write went to the editor: ${calls}`);
    assert(calls.filter((x) => x === `write ${built}`).length === 2, `Write and Edit wrote: ${calls}`);
    assert(calls.includes(`read ${built}`), `the Edit read through the editor: ${calls}`);
    assert(readFileSync(built, 'utf8') === 'edited\n', 'out/built.txt edited');
    // Bash ran in the editor's terminal, through rawko's confining helper.
    const term = c.fsCalls.find((f) => f.method === 'terminal');
    assert(term, `a terminal was created: ${calls}`);
    assert(term.args.includes('__exec') && term.args.includes('-c'), `through the helper: ${term.command} ${term.args}`);
    const released = c.fsCalls.find((f) => f.method === 'release' && f.id === term.id);
    assert(released, `the terminal was released: ${calls}`);
    assert(
      released.output.includes('from-terminal\nedited\n') && released.exit?.exitCode === 3,
      `the command ran in the terminal: ${JSON.stringify(released)}`,
    );
    assert(/Permission denied|Read-only|cannot create/i.test(released.output), `the write outside was refused: ${released.output}`);
    const shown = c.updates.filter(
      (u) => u.sessionUpdate === 'tool_call_update' && JSON.stringify(u.content ?? []).includes(term.id),
    );
    assert(shown.length >= 1, 'the terminal is shown in the tool call');
    const last = shown[shown.length - 1];
    assert(last.status === 'failed', `the Bash call's last update: ${JSON.stringify(last)}`);
    assert(!existsSync(join(place.env.HOME, 'escape.txt')), 'the command wrote outside the workspace');
  } finally {
    await c.close();
  }
});

scenario('session/cancel kills and releases a command running in the editor terminal', async () => {
  const script = `turns:
  - tool_calls:
      - {name: Bash, input: {command: "echo started; sleep 30; echo never"}}
  - text: "Never seen."
`;
  const place = workspace(script);
  const { c } = await start(place, {}, { fs: true, terminal: true });
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    const turn = c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Run long' }] });
    await c.until('the terminal', () => c.fsCalls.some((f) => f.method === 'terminal'));
    await new Promise((res) => setTimeout(res, 300));
    await c.conn.cancel({ sessionId: s.sessionId });
    const r = await withLimit(turn, 'the cancelled turn');
    assert(r.stopReason === 'cancelled', `stopReason ${r.stopReason}`);
    const id = c.fsCalls.find((f) => f.method === 'terminal').id;
    await c.until('kill and release', () =>
      c.fsCalls.some((f) => f.method === 'kill' && f.id === id) &&
      c.fsCalls.some((f) => f.method === 'release' && f.id === id),
    );
    const released = c.fsCalls.find((f) => f.method === 'release' && f.id === id);
    assert(released.output.includes('started') && !released.output.includes('never'), `output: ${released.output}`);
  } finally {
    await c.close();
  }
});

const SILENT_SCRIPT = `turns:
  - tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Went on after it."
`;

scenario('bad lines get their errors and an editor that does not answer fails the call, not the turn', async () => {
  const place = workspace(SILENT_SCRIPT, { editorRequestSeconds: 1 });
  const { c } = await start(place, { silentRead: true }, { fs: true });
  try {
    // Lines the SDK would never write: not UTF-8, not JSON. Each is answered (id null) and
    // rawko goes on; the SDK client takes the answers in its stride.
    c.child.stdin.write(Buffer.from([0x7b, 0xff, 0xfe, 0x7d, 0x0a]));
    c.child.stdin.write('{not json\n');
    const s = await withLimit(c.conn.newSession({ cwd: place.ws, mcpServers: [] }), 'session/new');
    const r = await withLimit(
      c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Read it' }] }),
      'the prompt turn',
    );
    assert(r.stopReason === 'end_turn', `stopReason ${r.stopReason}`);
    assert(c.fsCalls.some((f) => f.method === 'read'), `the editor was asked: ${JSON.stringify(c.fsCalls)}`);
    const failed = c.updates.filter((u) => u.sessionUpdate === 'tool_call_update' && u.status === 'failed');
    assert(
      JSON.stringify(failed).includes('the editor did not answer fs/read_text_file within 1 s'),
      `the Read failed with the reason: ${JSON.stringify(failed)}`,
    );
    assert(text(c.updates, 'agent_message_chunk').includes('Went on after it.'), 'the turn went on');
  } finally {
    await c.close();
  }
});

const ORDER_SCRIPT = `turns:
  - text: "Reading first."
    tool_calls:
      - {name: Read, input: {file_path: README.md}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Writing the release notes."
    tool_calls:
      - {name: Write, input: {file_path: RELEASE.md, content: "v1\\n"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "All done."
`;

scenario('every update rawko sends before a request reaches the client before it', async () => {
  const place = workspace(ORDER_SCRIPT);
  const { c } = await start(place, {}, { fs: true });
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    await c.conn.setSessionMode({ sessionId: s.sessionId, modeId: 'feature' });
    const r = await withLimit(
      c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Write the release notes' }] }),
      'the prompt turn',
    );
    assert(r.stopReason === 'end_turn', `stopReason ${r.stopReason}`);
    const ws = realpathSync(place.ws);
    // What reached the client, in the order it arrived.
    const seen = c.arrivals.filter((m) => m.method).map((m) => {
      const u = m.params?.update;
      if (m.method !== 'session/update') return { what: `${m.method} ${m.params?.path ?? ''}`.trim() };
      if (u.sessionUpdate === 'plan') {
        return { what: `plan ${u.entries.findIndex((e) => e.status === 'in_progress')}` };
      }
      return { what: u.sessionUpdate, id: u.toolCallId, paths: (u.locations ?? []).map((l) => l.path) };
    });
    const at = (test, what) => {
      const i = seen.findIndex(test);
      assert(i >= 0, `${what} never arrived: ${JSON.stringify(seen.map((x) => x.what))}`);
      return i;
    };
    const read = at((x) => x.what === `fs/read_text_file ${join(ws, 'README.md')}`, 'the Read');
    const readCall = at((x) => x.what === 'tool_call' && x.paths.includes(join(ws, 'README.md')), "the Read's tool_call");
    const write = at((x) => x.what === `fs/write_text_file ${join(ws, 'RELEASE.md')}`, 'the Write');
    const writeCall = at(
      (x) => x.what === 'tool_call' && x.paths.includes(join(ws, 'RELEASE.md')),
      "the Write's tool_call",
    );
    const build = at((x) => x.what === 'plan 1', 'the plan update into Build');
    const order = seen.map((x) => x.what).join('\n  ');
    assert(readCall < read, `the Read's tool_call arrived after fs/read_text_file:\n  ${order}`);
    assert(writeCall < write, `the Write's tool_call arrived after fs/write_text_file:\n  ${order}`);
    assert(build < write, `the plan update out of the read-only phase arrived after the write:\n  ${order}`);
    assert(readFileSync(join(ws, 'RELEASE.md'), 'utf8') === 'v1\n', 'RELEASE.md written through the editor');
  } finally {
    await c.close();
  }
});

const option = (options, id) => (options ?? []).find((o) => o.id === id);
const optionUpdates = (c) => c.updates.filter((u) => u.sessionUpdate === 'config_option_update');

scenario('the workflow is a config option of category mode; set_config_option chooses it', async () => {
  const place = workspace('turns: []\n');
  const { c } = await start(place);
  try {
    const s = await withLimit(c.conn.newSession({ cwd: place.ws, mcpServers: [] }), 'session/new');
    const workflow = option(s.configOptions, 'workflow');
    assert(workflow, `configOptions: ${JSON.stringify(s.configOptions)}`);
    assert(workflow.category === 'mode' && workflow.type === 'select', `the option: ${JSON.stringify(workflow)}`);
    assert(workflow.currentValue === 'none', `current ${workflow.currentValue}`);
    const values = workflow.options.map((o) => o.value);
    assert(values[0] === 'none' && values.includes('feature'), `values ${values}`);
    assert(s.modes?.availableModes?.some((m) => m.id === 'feature'), 'modes are still there for older clients');
    assert(!option(s.configOptions, 'model'), 'no model option with one provider');
    const r = await withLimit(
      c.conn.setConfigOption({ sessionId: s.sessionId, configId: 'workflow', value: 'feature' }),
      'set_config_option',
    );
    assert(option(r.configOptions, 'workflow')?.currentValue === 'feature', `answer: ${JSON.stringify(r)}`);
    await c.until('current_mode_update for the clients of modes', () =>
      c.updates.some((u) => u.sessionUpdate === 'current_mode_update' && u.currentModeId === 'feature'),
    );
    let refused;
    await c.conn
      .setConfigOption({ sessionId: s.sessionId, configId: 'workflow', value: 'nope' })
      .catch((e) => (refused = e));
    assert(refused?.code === -32602 && /unknown mode "nope"/.test(refused.message), `refused: ${refused?.message}`);
    // set_mode, the older way, tells the clients of config options too.
    await c.conn.setSessionMode({ sessionId: s.sessionId, modeId: 'none' });
    await c.until('config_option_update after set_mode', () =>
      optionUpdates(c).some((u) => option(u.configOptions, 'workflow')?.currentValue === 'none'),
    );
  } finally {
    await c.close();
  }
});

scenario('with two providers the model is a config option, and the chosen one runs the task', async () => {
  const place = workspace('turns:\n  - text: "From the first script."\n', {}, [
    { name: 'scripted', model: 'first', script: '.rawko/script.yaml' },
    { name: 'scripted', model: 'second', script: '.rawko/second.yaml' },
  ]);
  writeFileSync(join(place.ws, '.rawko/second.yaml'), 'turns:\n  - text: "From the second script."\n');
  const { c } = await start(place);
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    const model = option(s.configOptions, 'model');
    assert(model?.category === 'model' && model.type === 'select', `configOptions: ${JSON.stringify(s.configOptions)}`);
    const values = model.options.map((o) => o.value);
    assert(values.length === 2 && model.currentValue === values[0], `model option ${JSON.stringify(model)}`);
    const r = await c.conn.setConfigOption({ sessionId: s.sessionId, configId: 'model', value: values[1] });
    assert(option(r.configOptions, 'model')?.currentValue === values[1], `answer ${JSON.stringify(r)}`);
    const turn = await withLimit(
      c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Which one?' }] }),
      'the prompt turn',
    );
    assert(turn.stopReason === 'end_turn', `stopReason ${turn.stopReason}`);
    const said = text(c.updates, 'agent_message_chunk');
    assert(said.includes('From the second script.') && !said.includes('first'), `said: ${said}`);
  } finally {
    await c.close();
  }
});

scenario('a task start names the session and shows its options; the workflow ending returns to none', async () => {
  const place = workspace(WORKFLOW_SCRIPT);
  const { c } = await start(place);
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    await c.conn.setConfigOption({ sessionId: s.sessionId, configId: 'workflow', value: 'feature' });
    const before = optionUpdates(c).length;
    const r = await withLimit(
      c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Build the thing\nwith details' }] }),
      'the prompt turn',
    );
    assert(r.stopReason === 'end_turn', `stopReason ${r.stopReason}`);
    const info = c.updates.filter((u) => u.sessionUpdate === 'session_info_update');
    assert(info[0]?.title === 'Build the thing', `session_info_update: ${JSON.stringify(info)}`);
    assert(!Number.isNaN(Date.parse(info[0].updatedAt)), `updatedAt ${info[0].updatedAt}`);
    const kinds = c.updates.map((u) => u.sessionUpdate);
    const titled = kinds.indexOf('session_info_update');
    assert(titled >= 0 && titled < kinds.indexOf('plan'), `the title before the task's first plan: ${kinds}`);
    const updates = optionUpdates(c).slice(before).map((u) => option(u.configOptions, 'workflow').currentValue);
    assert(updates[0] === 'feature', `at the start: ${updates}`);
    assert(updates[updates.length - 1] === 'none', `once the workflow ended: ${updates}`);
    assert(
      c.updates.some((u) => u.sessionUpdate === 'current_mode_update' && u.currentModeId === 'none'),
      'the modes follow',
    );
  } finally {
    await c.close();
  }
});

scenario("session/list shows this workspace's sessions newest first with their task and time", async () => {
  const place = workspace('turns:\n  - text: "Done."\n  - text: "Done again."\n');
  const other = workspace('turns:\n  - text: "Elsewhere."\n');
  // Both workspaces keep their state in the first one's state directory.
  Object.assign(other.env, { XDG_STATE_HOME: place.env.XDG_STATE_HOME });
  const { c } = await start(place);
  try {
    const first = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    await withLimit(c.conn.prompt({ sessionId: first.sessionId, prompt: [{ type: 'text', text: 'The first task' }] }), 'first');
    await new Promise((res) => setTimeout(res, 20));
    const second = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    await withLimit(c.conn.prompt({ sessionId: second.sessionId, prompt: [{ type: 'text', text: 'The second task' }] }), 'second');
    const idle = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    const elsewhere = await c.conn.newSession({ cwd: other.ws, mcpServers: [] });
    await withLimit(
      c.conn.prompt({ sessionId: elsewhere.sessionId, prompt: [{ type: 'text', text: 'Another folder' }] }),
      'elsewhere',
    );
    const listed = await withLimit(c.conn.listSessions({ cwd: place.ws }), 'session/list');
    const ids = listed.sessions.map((x) => x.sessionId);
    assert(
      JSON.stringify(ids) === JSON.stringify([second.sessionId, first.sessionId]),
      `listed ${JSON.stringify(listed)} (idle ${idle.sessionId}, elsewhere ${elsewhere.sessionId})`,
    );
    assert(listed.sessions[0].title === 'The second task', `title ${listed.sessions[0].title}`);
    assert(listed.sessions[0].cwd === realpathSync(place.ws), `cwd ${listed.sessions[0].cwd}`);
    const [a, b] = listed.sessions.map((x) => Date.parse(x.updatedAt));
    assert(a >= b && !Number.isNaN(b), `updatedAt ${listed.sessions.map((x) => x.updatedAt)}`);
    assert(listed.nextCursor == null, `one page: ${listed.nextCursor}`);
    const there = await c.conn.listSessions({ cwd: other.ws });
    assert(
      there.sessions.length === 1 && there.sessions[0].title === 'Another folder',
      `the other folder: ${JSON.stringify(there)}`,
    );
    let refused;
    await c.conn.listSessions({ cwd: place.ws, cursor: 'nonsense' }).catch((e) => (refused = e));
    assert(refused?.code === -32602, `a bad cursor: ${refused?.message}`);
  } finally {
    await c.close();
  }
});

scenario('session/resume after a SIGKILL goes on without the replay', async () => {
  const script = `turns:
  - text: "First turn."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Second turn after the restart."
    delay_ms: 3000
`;
  const place = workspace(script);
  let sessionId;
  {
    const { c } = await start(place);
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    sessionId = s.sessionId;
    c.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'Remember me' }] }).catch(() => {});
    await c.until('the Read finished', () =>
      c.updates.some((u) => u.sessionUpdate === 'tool_call_update' && u.status === 'completed'),
    );
    c.child.kill('SIGKILL');
    await c.exited;
  }
  const { c } = await start(place);
  try {
    const r = await withLimit(c.conn.resumeSession({ sessionId, cwd: place.ws, mcpServers: [] }), 'session/resume');
    assert(option(r.configOptions, 'workflow'), `configOptions on resume: ${JSON.stringify(r)}`);
    const kinds = c.updates.map((u) => u.sessionUpdate);
    assert(
      !kinds.some((k) => ['user_message_chunk', 'agent_message_chunk', 'tool_call', 'plan'].includes(k)),
      `nothing replayed: ${kinds}`,
    );
    const turn = await withLimit(
      c.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'Go on' }] }),
      'the turn after resume',
    );
    assert(turn.stopReason === 'end_turn', `stopReason ${turn.stopReason}`);
    assert(text(c.updates, 'agent_message_chunk').includes('Second turn'), 'the task went on');
    assert(!text(c.updates, 'agent_message_chunk').includes('First turn.'), 'the first turn was not replayed');
  } finally {
    await c.close();
  }
});

scenario('session/close ends the turn and the session; it can be loaded again', async () => {
  const place = workspace(SLOW_SCRIPT);
  const { c } = await start(place);
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    const turn = c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Go slowly' }] });
    await c.until('the task started', () => c.updates.some((u) => u.sessionUpdate === 'session_info_update'));
    await withLimit(c.conn.closeSession({ sessionId: s.sessionId }), 'session/close');
    const r = await withLimit(turn, 'the closed turn');
    assert(r.stopReason === 'cancelled', `stopReason ${r.stopReason}`);
    let refused;
    await c.conn
      .prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Still there?' }] })
      .catch((e) => (refused = e));
    assert(refused && /unknown session/.test(refused.message), `a prompt after close: ${refused?.message}`);
    await withLimit(c.conn.loadSession({ sessionId: s.sessionId, cwd: place.ws, mcpServers: [] }), 'session/load');
    assert(text(c.updates, 'user_message_chunk').includes('Go slowly'), 'the closed session loads');
  } finally {
    await c.close();
  }
});

scenario("a client's $/cancel_request of a prompt ends its turn cancelled", async () => {
  const place = workspace(SLOW_SCRIPT);
  const { c } = await start(place);
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    const abort = new AbortController();
    const turn = c.conn.prompt(
      { sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Go slowly' }] },
      { cancellationSignal: abort.signal },
    );
    await c.until('the task started', () => c.updates.some((u) => u.sessionUpdate === 'session_info_update'));
    abort.abort();
    const r = await withLimit(turn, 'the turn after $/cancel_request');
    assert(r.stopReason === 'cancelled', `stopReason ${r.stopReason}`);
    // The task waits, as after session/cancel: the next prompt goes on with it.
    assert(!text(c.updates, 'agent_message_chunk').includes('Never seen.'), 'the slow turn was stopped');
  } finally {
    await c.close();
  }
});

scenario('rawko withdraws a permission request it no longer needs ($/cancel_request)', async () => {
  const place = workspace(BLOCKED_SCRIPT, { approvalTimeoutSeconds: 1 });
  const { c } = await start(place, { permission: () => 'never' });
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    await c.conn.setSessionMode({ sessionId: s.sessionId, modeId: 'feature' });
    const turn = c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Try writing' }] });
    // The approval times out: the client's prompt is withdrawn.
    await c.until('the first request withdrawn', () =>
      c.cancelled.some((x) => x.method === 'session/request_permission'),
    );
    assert(
      c.cancelled[0].toolCallId === c.permissions[0].toolCall.toolCallId,
      `withdrawn: ${JSON.stringify(c.cancelled)}`,
    );
    await c.until('the stream says why', () => text(c.updates, 'agent_message_chunk').includes('No answer in time'));
    // A cancel while the second one is open withdraws it too.
    await c.until('the second request', () => c.permissions.length >= 2);
    await c.conn.cancel({ sessionId: s.sessionId });
    await c.until('the second request withdrawn', () =>
      c.cancelled.filter((x) => x.method === 'session/request_permission').length >= 2,
    );
    const r = await withLimit(turn, 'the cancelled turn');
    assert(r.stopReason === 'cancelled', `stopReason ${r.stopReason}`);
    assert(!existsSync(join(place.ws, 'denied.txt')) && !existsSync(join(place.ws, 'allowed.txt')), 'nothing written');
  } finally {
    await c.close();
  }
});

scenario('rawko withdraws an fs request the editor did not answer in time ($/cancel_request)', async () => {
  const place = workspace(SILENT_SCRIPT, { editorRequestSeconds: 1 });
  const { c } = await start(place, { silentRead: true }, { fs: true });
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    const r = await withLimit(
      c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Read it' }] }),
      'the prompt turn',
    );
    assert(r.stopReason === 'end_turn', `stopReason ${r.stopReason}`);
    await c.until('the read withdrawn', () => c.cancelled.some((x) => x.method === 'fs/read_text_file'));
    assert(c.cancelled[0].path.endsWith('README.md'), `withdrawn: ${JSON.stringify(c.cancelled)}`);
  } finally {
    await c.close();
  }
});

scenario('the usage a provider reports is a usage_update', async () => {
  const script = `turns:
  - text: "Reading."
    usage: {input_tokens: 1200, output_tokens: 80, context_window: 200000}
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Done."
    usage: {input_tokens: 1500, output_tokens: 20}
`;
  const place = workspace(script);
  const { c } = await start(place);
  try {
    const s = await c.conn.newSession({ cwd: place.ws, mcpServers: [] });
    const r = await withLimit(
      c.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'Count' }] }),
      'the prompt turn',
    );
    assert(r.stopReason === 'end_turn', `stopReason ${r.stopReason}`);
    const usage = c.updates.filter((u) => u.sessionUpdate === 'usage_update');
    assert(
      usage.length === 1 && usage[0].used === 1280 && usage[0].size === 200000,
      `usage updates (the second turn names no window): ${JSON.stringify(usage)}`,
    );
  } finally {
    await c.close();
  }
});

// --- runner ---------------------------------------------------------------------------------

const filter = process.argv[2];
let passed = 0;
let failed = 0;
for (const { name, fn } of scenarios) {
  if (filter && !name.includes(filter)) continue;
  const t0 = Date.now();
  try {
    await fn();
    passed++;
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.stack ?? e}`);
  }
}
for (const root of roots) rmSync(root, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
