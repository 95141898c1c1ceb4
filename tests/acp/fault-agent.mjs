// A small scripted ACP agent for the fault cases of rawko's `acp` provider, written with the
// official TypeScript SDK's AgentSideConnection (tests/acp/package.json pins it). rawko is its
// client. The first argument chooses how it misbehaves:
//
//   crash      writes a line to stderr and exits 3 in the middle of the first prompt
//   hang       answers initialize and session/new, then never answers the prompt nor sends anything
//   malformed  writes lines that are not JSON-RPC to stdout, then answers the prompt normally
//   outside    asks rawko to read /etc/hostname, to write a file outside the workspace (the path
//              in its second argument), and permission for a Write there; says what it got; ends
//   slow       says one line, then waits for session/cancel: writes cancelled.txt in its working
//              directory and ends the prompt `cancelled`
//   chatty     (the bench) per prompt: N message chunks, then M permission requests, then ends;
//              N and M in the second and third arguments
//
//   node tests/acp/fault-agent.mjs MODE [ARG…]

import { Readable, Writable } from 'node:stream';
import { AgentSideConnection, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';

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
    return { protocolVersion: PROTOCOL_VERSION, agentCapabilities: { loadSession: false } };
  }

  async newSession() {
    return { sessionId: `fault-${process.pid}` };
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

  async prompt(params) {
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
      default:
        process.stderr.write(`fault-agent: unknown mode ${mode}\n`);
        process.exit(2);
    }
  }
}

const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
new AgentSideConnection((conn) => new Agent(conn), stream);
