// A small scripted ACP agent for the fault cases of rawko's `acp` provider, written with the
// official TypeScript SDK's agent app (`agent()`; tests/acp/package.json pins it). rawko is its
// client. The first argument chooses how it misbehaves:
//
//   crash      writes a line to stderr and exits 3 in the middle of the first prompt
//   hang       answers initialize and session/new, then never answers the prompt nor sends anything
//   malformed  writes lines that are not JSON-RPC to stdout, then answers the prompt normally
//   outside    asks rawko to read /etc/hostname, to write a file outside the workspace (the path
//              in its second argument), and permission for a Write there; says what it got; ends
//   slow       says one line, then waits for session/cancel: writes cancelled.txt in its working
//              directory and ends the prompt `cancelled`
//   remember   can load sessions: logs each prompt to prompts.log (its session and text), answers
//              "First turn." in a new session; session/load writes loaded.txt (the id), replays
//              a line of the old session, and the next prompt answers "Loaded and going on."
//   chatty     (the bench) per prompt: N message chunks, then M permission requests, then ends;
//              N and M in the second and third arguments
//   terminals  for each command line in its arguments: asks permission for Bash with it, then runs
//              it in a terminal (terminal/create); says how each ended
//   paths      asks permission for a Write of `a.txt`, then writes locked/a.txt and a.txt through
//              rawko (fs/write_text_file); says what it got
//   direct     writes with node's own fs: the path in its second argument, direct.txt in its working
//              directory, and a file in its TMPDIR; reads README.md; says what it got
//   detach     writes early.txt in the directory of its second argument, starts a detached child
//              (its own session) that writes late.txt there after 2 s, and ends the prompt
//   flood      N message chunks of 10 KiB (N in its second argument, default 2048: 20 MiB)
//   endless    a message chunk every 50 ms, forever
//   report     reports a Write of reported.txt as done (a completed tool call it never made)
//   modes      advertises permission modes as the current adapters do and starts in one that
//              does not ask: its second argument `config` (a config option of category `mode`
//              and `modes`, as claude-agent-acp), `legacy` (`modes` only) or `noask` (no mode
//              that asks); says the mode rawko set ("MODE id"), switches itself to `acceptEdits`
//              (current_mode_update, config_option_update) and says the mode it is in 3 s
//              later ("BACK id"), each with the method that set it last
//   norawinput asks permission for a Write of new.txt as Gemini CLI does (no rawInput: a diff
//              and a location only), then writes new.txt through rawko (fs/write_text_file);
//              says what it got
//   mcp        starts the MCP server named in session/new (`rawko mcp`), lists its tools over
//              MCP, says them ("TOOLS a,b"), and ends
//   codexmcp   calls another MCP server's tool as Codex does (a tool_call titled
//              `mcp.other.lookup`, rawInput {server, tool, arguments}), then asks permission for
//              it with the same rawInput; says the outcome
//   stepwrite  (with FAULT_LOAD=1) moves the workflow on, then writes direct.txt with node's own
//              fs in the same prompt and says how it went; in a loaded session it says what its
//              first prompt told it ("TOLD: …"), only writes, then moves the workflow on once more
//   ownwrite   asks permission for a Write of own.txt and, allowed, writes it with node's own fs;
//              reports that tool call failed with the error it got and waits for session/cancel;
//              its next prompt says what it was told ("NEXT: …")
//
// The modes from `terminals` on act in the first prompt only (later ones just end), and with
// FAULT_STEP=N in their environment then move the task's workflow on N times (`workflow_step`
// next), through rawko's MCP endpoint named in session/new, as `rawko mcp` would. With
// FAULT_LOAD=1 they can load sessions (the `remember` mode's session/load, without its files).

import { Readable, Writable } from 'node:stream';
import { agent, methods, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';

const [mode, arg1, arg2] = process.argv.slice(2);

if (mode === 'malformed') {
  process.stdout.write('this is not JSON at all\n');
  process.stdout.write('{"jsonrpc": "2.0", "method": "session/update", "params": {"nonsense": true}}\n');
  process.stdout.write('{"jsonrpc": "2.0", "id": "x", "result": "an answer to nothing"}\n');
}

class Agent {
  constructor(conn) {
    this.conn = conn;
  }

  async initialize() {
    const load = mode === 'remember' || process.env.FAULT_LOAD === '1';
    return { protocolVersion: PROTOCOL_VERSION, agentCapabilities: { loadSession: load } };
  }

  async newSession(params) {
    this.mcpEnv = params.mcpServers?.[0]?.env ?? [];
    this.mcpServer = params.mcpServers?.[0];
    if (mode === 'modes') return { sessionId: `fault-${process.pid}`, ...this.advertise('auto') };
    return { sessionId: `fault-${process.pid}` };
  }

  // The `modes` mode: what it advertises, in mode `current`.
  advertise(current) {
    this.mode = current;
    const all =
      arg1 === 'noask'
        ? [
            { id: 'auto', name: 'Auto', description: 'Decides by itself' },
            { id: 'full', name: 'Full access', description: 'Edits and runs anything' },
            { id: 'acceptEdits', name: 'Accept edits', description: 'Accepts all file edits' },
          ]
        : [
            { id: 'default', name: 'Manual', description: 'Always ask before making changes' },
            { id: 'acceptEdits', name: 'Accept edits', description: 'Automatically accept all file edits' },
            { id: 'plan', name: 'Plan', description: 'Ask before planning' },
            { id: 'auto', name: 'Auto', description: 'Handles permission decisions' },
          ];
    const modes = { currentModeId: current, availableModes: all };
    if (arg1 !== 'config') return { modes };
    const options = all.map((m) => ({ value: m.id, name: m.name, description: m.description }));
    return {
      modes,
      configOptions: [
        { id: 'model', name: 'Model', category: 'model', type: 'select', currentValue: 'm', options: [{ value: 'm', name: 'M' }] },
        { id: 'perm', name: 'Mode', category: 'mode', type: 'select', currentValue: current, options },
      ],
    };
  }

  async setSessionMode(params) {
    process.stderr.write(`fault-agent: set_mode ${params.modeId}\n`);
    this.mode = params.modeId;
    this.via = 'set_mode';
    return {};
  }

  async setSessionConfigOption(params) {
    process.stderr.write(`fault-agent: set_config_option ${params.configId}=${params.value}\n`);
    if (params.configId === 'perm') this.mode = params.value;
    this.via = 'set_config_option';
    return { configOptions: this.advertise(this.mode).configOptions ?? [] };
  }

  async loadSession(params) {
    this.mcpEnv = params.mcpServers?.[0]?.env ?? [];
    if (mode === 'stepwrite') this.loaded = params.sessionId;
    if (mode !== 'remember') return {};
    const fs = await import('node:fs');
    fs.writeFileSync('loaded.txt', params.sessionId);
    this.loaded = params.sessionId;
    await this.say(params.sessionId, 'REPLAYED OLD TEXT');
    return {};
  }

  async authenticate() {
    return {};
  }

  async cancel() {
    if (this.cancelled) this.cancelled();
  }

  async say(sessionId, text) {
    await this.conn.sessionUpdate({
      sessionId,
      update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } },
    });
  }

  async ask(sessionId, toolCallId, title, kind, rawInput) {
    return this.conn.requestPermission({
      sessionId,
      toolCall: { toolCallId, title, kind, rawInput },
      options: [
        { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
        { optionId: 'no', name: 'Reject', kind: 'reject_once' },
      ],
    });
  }

  async step(action) {
    const env = Object.fromEntries(this.mcpEnv.map((v) => [v.name, v.value]));
    const r = await fetch(env.RAWKO_MCP_URL, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${env.RAWKO_MCP_TOKEN}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'rawko.workflowStep', params: { action } }),
    });
    return JSON.stringify(await r.json());
  }

  async prompt(params) {
    const sessionId = params.sessionId;
    if (mode === 'stepwrite') return this.stepWrite(params);
    if (mode === 'ownwrite') return this.ownWrite(params);
    const once = ['terminals', 'paths', 'direct', 'detach', 'flood', 'report', 'modes', 'norawinput', 'mcp', 'codexmcp'];
    if (once.includes(mode)) {
      if (this.acted) {
        await this.say(sessionId, 'Nothing more.');
        return { stopReason: 'end_turn' };
      }
      this.acted = true;
      const answer = await this.act(params);
      for (let i = 0; i < Number(process.env.FAULT_STEP ?? 0); i++) {
        await this.say(sessionId, `step: ${await this.step('next')}\n`);
      }
      return answer;
    }
    return this.act(params);
  }

  // The `stepwrite` mode.
  async stepWrite(params) {
    const sessionId = params.sessionId;
    if (this.loaded && !this.told) {
      this.told = true;
      await this.say(sessionId, `TOLD: ${params.prompt.map((b) => b.text ?? '').join('\n')}\n`);
    }
    if (!this.loaded && !this.stepped) {
      this.stepped = true;
      await this.say(sessionId, `step: ${await this.step('next')}\n`);
    }
    const fs = await import('node:fs');
    const path = `${process.cwd()}/direct.txt`;
    try {
      fs.writeFileSync(path, 'direct\n');
      await this.say(sessionId, `write ${path}: DONE\n`);
    } catch (e) {
      await this.say(sessionId, `write ${path}: FAILED ${e.code}\n`);
    }
    if (this.loaded && !this.finished) {
      this.finished = true;
      await this.say(sessionId, `step: ${await this.step('next')}\n`);
    }
    return { stopReason: 'end_turn' };
  }

  // The `ownwrite` mode.
  async ownWrite(params) {
    const sessionId = params.sessionId;
    if (this.wrote) {
      const text = params.prompt.map((b) => b.text ?? '').join('\n');
      await this.say(sessionId, `NEXT: ${text}`);
      return { stopReason: 'end_turn' };
    }
    this.wrote = true;
    const path = `${process.cwd()}/own.txt`;
    const toolCallId = `own-${Date.now()}`;
    const rawInput = { file_path: path, content: 'written for the agent\n' };
    await this.conn.sessionUpdate({
      sessionId,
      update: { sessionUpdate: 'tool_call', toolCallId, title: 'Write own.txt', kind: 'edit', status: 'pending', rawInput },
    });
    const perm = await this.ask(sessionId, toolCallId, 'Write own.txt', 'edit', rawInput);
    if (perm.outcome.outcome !== 'selected' || perm.outcome.optionId !== 'yes') {
      await this.say(sessionId, `permission: ${JSON.stringify(perm.outcome)}`);
      return { stopReason: 'end_turn' };
    }
    let error = null;
    try {
      (await import('node:fs')).writeFileSync(path, rawInput.content);
    } catch (e) {
      error = `${e.code}: ${e.message}`;
    }
    await this.conn.sessionUpdate({
      sessionId,
      update: {
        sessionUpdate: 'tool_call_update',
        toolCallId,
        status: error ? 'failed' : 'completed',
        content: [{ type: 'content', content: { type: 'text', text: error ?? 'written' } }],
      },
    });
    if (!error) return { stopReason: 'end_turn' };
    await new Promise((resolve) => {
      this.cancelled = resolve;
    });
    return { stopReason: 'cancelled' };
  }

  async act(params) {
    const sessionId = params.sessionId;
    switch (mode) {
      case 'crash':
        await this.say(sessionId, 'Starting.');
        process.stderr.write('fault-agent: boom, something broke inside\n');
        setTimeout(() => process.exit(3), 50);
        return new Promise(() => {});
      case 'hang':
        return new Promise(() => {});
      case 'slow':
        await this.say(sessionId, 'Waiting for cancel.');
        await new Promise((resolve) => {
          this.cancelled = resolve;
        });
        (await import('node:fs')).writeFileSync('cancelled.txt', 'cancelled\n');
        return { stopReason: 'cancelled' };
      case 'remember': {
        const fs = await import('node:fs');
        const text = params.prompt.map((b) => b.text ?? '').join('\n');
        fs.appendFileSync('prompts.log', JSON.stringify({ sessionId, text }) + '\n');
        await this.say(sessionId, this.loaded ? 'Loaded and going on.' : 'First turn.');
        return { stopReason: 'end_turn' };
      }
      case 'malformed':
        await this.say(sessionId, 'Still here after the garbage.');
        return { stopReason: 'end_turn' };
      case 'outside': {
        const results = [];
        try {
          const r = await this.conn.readTextFile({ sessionId, path: '/etc/hostname' });
          results.push(`read /etc/hostname: GOT ${JSON.stringify(r.content)}`);
        } catch (e) {
          results.push(`read /etc/hostname: REFUSED ${e.message ?? JSON.stringify(e)}`);
        }
        try {
          await this.conn.writeTextFile({ sessionId, path: arg1, content: 'evil\n' });
          results.push(`write ${arg1}: DONE`);
        } catch (e) {
          results.push(`write ${arg1}: REFUSED ${e.message ?? JSON.stringify(e)}`);
        }
        const perm = await this.conn.requestPermission({
          sessionId,
          toolCall: {
            toolCallId: 'outside-write-1',
            title: `Write ${arg1}`,
            kind: 'edit',
            rawInput: { file_path: arg1, content: 'evil\n' },
          },
          options: [
            { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
            { optionId: 'no', name: 'Reject', kind: 'reject_once' },
          ],
        });
        results.push(`permission: ${JSON.stringify(perm.outcome)}`);
        await this.say(sessionId, results.join('\n'));
        return { stopReason: 'end_turn' };
      }
      case 'chatty': {
        const chunks = Number(arg1 ?? 100);
        const asks = Number(arg2 ?? 10);
        for (let i = 0; i < chunks; i++) await this.say(sessionId, `chunk ${i} `);
        for (let i = 0; i < asks; i++) {
          await this.conn.requestPermission({
            sessionId,
            toolCall: { toolCallId: `ask-${Date.now()}-${i}`, title: 'Grep x', kind: 'search', rawInput: { pattern: 'x' } },
            options: [
              { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
              { optionId: 'no', name: 'Reject', kind: 'reject_once' },
            ],
          });
        }
        return { stopReason: 'end_turn' };
      }
      case 'terminals': {
        const results = [];
        for (const command of process.argv.slice(3)) {
          const toolCallId = `bash-${results.length}-${Date.now()}`;
          const perm = await this.ask(sessionId, toolCallId, `Run ${command}`, 'execute', { command });
          if (perm.outcome.outcome !== 'selected' || perm.outcome.optionId !== 'yes') {
            results.push(`${command}: NOT ALLOWED`);
            continue;
          }
          try {
            const t = await this.conn.createTerminal({ sessionId, command, args: [] });
            const exit = await t.waitForExit();
            const out = await t.currentOutput();
            await t.release();
            results.push(`${command}: EXIT ${JSON.stringify(exit)} ${out.output.trim()}`);
          } catch (e) {
            results.push(`${command}: REFUSED ${e.message ?? JSON.stringify(e)}`);
          }
        }
        await this.say(sessionId, results.join('\n'));
        return { stopReason: 'end_turn' };
      }
      case 'paths': {
        const results = [];
        const perm = await this.ask(sessionId, `write-a-${Date.now()}`, 'Write a.txt', 'edit', {
          file_path: 'a.txt',
          content: 'approved\n',
        });
        results.push(`permission: ${JSON.stringify(perm.outcome)}`);
        for (const path of [`${process.cwd()}/locked/a.txt`, `${process.cwd()}/a.txt`]) {
          try {
            await this.conn.writeTextFile({ sessionId, path, content: 'written\n' });
            results.push(`write ${path}: DONE`);
          } catch (e) {
            results.push(`write ${path}: REFUSED ${e.message ?? JSON.stringify(e)}`);
          }
        }
        await this.say(sessionId, results.join('\n'));
        return { stopReason: 'end_turn' };
      }
      case 'direct': {
        const fs = await import('node:fs');
        const results = [];
        const tmp = process.env.TMPDIR ?? '/tmp';
        for (const path of [arg1, `${process.cwd()}/direct.txt`, `${tmp}/agent-scratch.txt`]) {
          try {
            fs.writeFileSync(path, 'direct\n');
            results.push(`write ${path}: DONE`);
          } catch (e) {
            results.push(`write ${path}: FAILED ${e.code}`);
          }
        }
        try {
          results.push(`read README.md: ${fs.readFileSync('README.md', 'utf8').trim()}`);
        } catch (e) {
          results.push(`read README.md: FAILED ${e.code}`);
        }
        await this.say(sessionId, results.join('\n'));
        return { stopReason: 'end_turn' };
      }
      case 'detach': {
        const { spawn } = await import('node:child_process');
        const fs = await import('node:fs');
        let early = 'DONE';
        try {
          fs.writeFileSync(`${arg1}/early.txt`, 'early\n');
        } catch (e) {
          early = `FAILED ${e.code}`;
        }
        const late = `${arg1}/late.txt`;
        const child = spawn('sh', ['-c', `sleep 2; echo late > '${late}'`], { detached: true, stdio: 'ignore' });
        child.unref();
        await this.say(sessionId, `early.txt: ${early}; started ${child.pid}.`);
        return { stopReason: 'end_turn' };
      }
      case 'flood': {
        const chunks = Number(arg1 ?? 2048);
        const piece = 'x'.repeat(10 * 1024 - 1) + '\n';
        for (let i = 0; i < chunks; i++) await this.say(sessionId, piece);
        await this.say(sessionId, 'FLOOD OVER');
        return { stopReason: 'end_turn' };
      }
      case 'endless':
        for (;;) {
          await this.say(sessionId, 'still talking ');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      case 'report':
        await this.conn.sessionUpdate({
          sessionId,
          update: {
            sessionUpdate: 'tool_call',
            toolCallId: `reported-${Date.now()}`,
            title: 'Write reported.txt',
            kind: 'edit',
            status: 'completed',
            rawInput: { file_path: `${process.cwd()}/reported.txt`, content: 'never written\n' },
          },
        });
        await this.say(sessionId, 'Wrote reported.txt (not really).');
        return { stopReason: 'end_turn' };
      case 'modes': {
        await this.say(sessionId, `MODE ${this.mode} ${this.via ?? 'unset'}\n`);
        if (arg1 === 'noask') return { stopReason: 'end_turn' };
        // It leaves the mode by itself, as claude-agent-acp does when a plan is accepted.
        const { modes, configOptions } = this.advertise('acceptEdits');
        await this.conn.sessionUpdate({
          sessionId,
          update: { sessionUpdate: 'current_mode_update', currentModeId: modes.currentModeId },
        });
        if (configOptions) {
          await this.conn.sessionUpdate({ sessionId, update: { sessionUpdate: 'config_option_update', configOptions } });
        }
        await new Promise((resolve) => setTimeout(resolve, 3000));
        await this.say(sessionId, `BACK ${this.mode} ${this.via ?? 'unset'}\n`);
        return { stopReason: 'end_turn' };
      }
      case 'norawinput': {
        const results = [];
        const path = `${process.cwd()}/new.txt`;
        const perm = await this.conn.requestPermission({
          sessionId,
          toolCall: {
            toolCallId: `write-new-${Date.now()}`,
            title: 'Writing to new.txt',
            kind: 'edit',
            content: [{ type: 'diff', path, oldText: null, newText: 'made by the agent\n' }],
            locations: [{ path }],
          },
          options: [
            { optionId: 'proceed_once', name: 'Allow', kind: 'allow_once' },
            { optionId: 'cancel', name: 'Reject', kind: 'reject_once' },
          ],
        });
        results.push(`permission: ${JSON.stringify(perm.outcome)}`);
        if (perm.outcome.outcome === 'selected' && perm.outcome.optionId === 'proceed_once') {
          try {
            await this.conn.writeTextFile({ sessionId, path, content: 'made by the agent\n' });
            results.push('write: DONE');
          } catch (e) {
            results.push(`write: REFUSED ${e.message ?? JSON.stringify(e)}`);
          }
        }
        await this.say(sessionId, results.join('\n'));
        return { stopReason: 'end_turn' };
      }
      case 'codexmcp': {
        const toolCallId = `mcp-${Date.now()}`;
        const title = 'mcp.other.lookup';
        const rawInput = { server: 'other', tool: 'lookup', arguments: { query: 'where is x' } };
        await this.conn.sessionUpdate({
          sessionId,
          update: { sessionUpdate: 'tool_call', toolCallId, title, kind: 'other', status: 'pending', rawInput },
        });
        const perm = await this.ask(sessionId, toolCallId, title, 'other', rawInput);
        await this.say(sessionId, `permission: ${JSON.stringify(perm.outcome)}`);
        return { stopReason: 'end_turn' };
      }
      case 'mcp': {
        const { spawn } = await import('node:child_process');
        const server = this.mcpServer;
        const env = { ...process.env, ...Object.fromEntries((server.env ?? []).map((v) => [v.name, v.value])) };
        const child = spawn(server.command, server.args ?? [], { env, stdio: ['pipe', 'pipe', 'inherit'] });
        const lines = [];
        let buffered = '';
        const answered = (id) =>
          new Promise((resolve) => {
            const look = () => {
              const found = lines.find((l) => l.id === id);
              if (found) resolve(found);
              else setTimeout(look, 20);
            };
            look();
          });
        child.stdout.on('data', (chunk) => {
          buffered += chunk;
          let at;
          while ((at = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, at).trim();
            buffered = buffered.slice(at + 1);
            if (line) lines.push(JSON.parse(line));
          }
        });
        const send = (message) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
        send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fault-agent', version: '1' } } });
        await answered(1);
        send({ method: 'notifications/initialized' });
        send({ id: 2, method: 'tools/list', params: {} });
        const tools = (await answered(2)).result.tools.map((t) => t.name);
        await this.say(sessionId, `TOOLS ${tools.join(',')}`);
        // The task learns of it on the side; a moment for that before the prompt ends.
        await new Promise((resolve) => setTimeout(resolve, 500));
        child.kill();
        return { stopReason: 'end_turn' };
      }
      default:
        process.stderr.write(`fault-agent: unknown mode ${mode}\n`);
        process.exit(2);
    }
  }
}

// The SDK's agent app: each ACP method the class above implements, by its name there; the client's
// methods it calls through `this.conn`, under the names it uses.
const clientOf = (cx) => ({
  sessionUpdate: (params) => cx.notify(methods.client.session.update, params),
  requestPermission: (params) => cx.request(methods.client.session.requestPermission, params),
  readTextFile: (params) => cx.request(methods.client.fs.readTextFile, params),
  writeTextFile: (params) => cx.request(methods.client.fs.writeTextFile, params),
  createTerminal: (params) => cx.createTerminal(params),
});
let impl;
const app = agent({ name: 'fault-agent' });
const s = methods.agent.session;
const requests = {
  initialize: methods.agent.initialize,
  authenticate: methods.agent.authenticate,
  newSession: s.new,
  loadSession: s.load,
  setSessionMode: s.setMode,
  setSessionConfigOption: s.setConfigOption,
  prompt: s.prompt,
};
for (const [name, method] of Object.entries(requests)) {
  if (typeof Agent.prototype[name] === 'function') {
    app.onRequest(method, ({ params }) => impl[name](params));
  }
}
app.onNotification(s.cancel, ({ params }) => impl.cancel(params));
const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
impl = new Agent(clientOf(app.connect(stream).client));
