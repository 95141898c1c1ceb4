/**
 * The output channel's text: streamed agent text, tool calls and results, injected context on one
 * line, reminders, hook output, completions and the task's end without Markdown, handoffs between
 * agents, errors, unknown kinds, and whose task it is.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OutputFormatter, plainText, RESULT_LINES } from '../../src/output';
import type { OutputParams } from '../../src/protocol';

function setup() {
  let text = '';
  const formatter = new OutputFormatter({ append: (t) => (text += t) }, (id) => (id === 'task-1' ? 'Add a flag' : undefined));
  let seq = 0;
  const emit = (kind: string, body: string, extra: Partial<OutputParams> = {}): void => {
    seq += 1;
    formatter.output({ taskId: 'task-1', seq, kind, text: body, ...extra });
  };
  return { formatter, emit, text: () => text };
}

describe('output channel', () => {
  it('streams the agent text and puts a tool call on a line of its own', () => {
    const { emit, text } = setup();
    emit('assistant_delta', 'Reading ');
    emit('assistant_delta', 'the code.');
    emit('tool_call', 'Read README.md', { tool: 'Read', toolCallId: 'c1', input: { path: 'README.md' } });
    emit('tool_result', 'ok', { tool: 'Read', toolCallId: 'c1', isError: false });
    assert.equal(text(), '── task-1: Add a flag ──\nReading the code.\n▶ Read README.md\n  ✓ Read: ok\n');
  });

  it('marks a failed or blocked tool result and clips a long one', () => {
    const { emit, text } = setup();
    emit('tool_result', 'Write is blocked in the Plan phase', { tool: 'Write', isError: true });
    const long = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n');
    emit('tool_result', long, { tool: 'Bash', isError: false });
    assert.match(text(), / {2}✗ Write: Write is blocked in the Plan phase\n/);
    assert.match(text(), new RegExp(`    line ${RESULT_LINES}\n    … \\(${30 - RESULT_LINES} more lines\\)\n`));
    assert.ok(!text().includes('line 13\n'));
  });

  it('collapses injected context to one line', () => {
    const { emit, text } = setup();
    emit('context_injected', '[Workflow path: Feature ▸ 📋 Plan]\n\nYou are working through...\nmore\n');
    assert.equal(text().split('\n')[1], '⟪ context injected: [Workflow path: Feature ▸ 📋 Plan] (5 lines) ⟫');
  });

  it('shows reminders, hook output, completions and errors', () => {
    const { emit, text } = setup();
    emit('reminder', 'The Feature is still active.');
    emit('hook_output', 'PreToolUse ./check.sh: all good');
    emit('completion', 'Feature complete');
    emit('error', 'provider error: rate limited');
    assert.match(text(), /↻ reminder: The Feature is still active\.\n/);
    assert.match(text(), /⚓ hook: PreToolUse \.\/check\.sh: all good\n/);
    assert.match(text(), /🏁 Feature complete\n/);
    assert.match(text(), /✗ error: provider error: rate limited\n/);
  });

  it('shows the text of a kind it does not know, and never throws on odd input', () => {
    const { formatter, emit, text } = setup();
    emit('thinking', 'hmm');
    assert.match(text(), /\[thinking\] hmm\n/);
    formatter.output({ taskId: 'task-1', seq: 99, kind: 'tool_call', text: undefined as unknown as string, tool: 'Read' });
    assert.match(text(), /▶ Read\n/);
  });

  it('says whose output follows when another task speaks', () => {
    const { formatter, emit, text } = setup();
    emit('assistant_delta', 'one');
    formatter.output({ taskId: 'task-2', seq: 1, kind: 'assistant_delta', text: 'two' });
    emit('assistant_delta', 'three');
    assert.equal(text(), '── task-1: Add a flag ──\none\n── task-2 ──\ntwo\n── task-1: Add a flag ──\nthree');
  });

  it('writes notes of its own on their own line', () => {
    const { formatter, emit, text } = setup();
    emit('assistant_delta', 'half a line');
    formatter.note('task-1', 'interrupted by you');
    assert.equal(text(), '── task-1: Add a flag ──\nhalf a line\n· interrupted by you\n');
  });

  it('shows a completion and the task\'s end without their Markdown', () => {
    const { formatter, emit, text } = setup();
    emit('completion', '🎉 **Feature complete!** All `4` phases done.\n\n**Task:** Add a flag');
    formatter.finished({ taskId: 'task-1', seq: 2, outcome: 'complete', summary: '🎉 **Feature complete!**\n\n- plan\n- [docs](https://x.invalid)' });
    formatter.finished({ taskId: 'task-1', seq: 3, outcome: 'cancelled', summary: '**Cancelled** by the user' });
    assert.equal(
      text(),
      '── task-1: Add a flag ──\n🏁 🎉 Feature complete! All 4 phases done.\n  Task: Add a flag\n🏁 task complete: 🎉 Feature complete!\n  - plan\n  - docs\n⊘ task cancelled: Cancelled by the user\n',
    );
  });

  it('separates the agents\' turns with a handoff line naming the new agent', () => {
    const { emit, text } = setup();
    emit('assistant_delta', 'The plan is written.');
    emit('handoff', '── handoff: planner → developer ──', { agent: 'developer' });
    emit('assistant_delta', 'Implementing.');
    emit('handoff', '', { agent: 'tester' });
    assert.equal(
      text(),
      '── task-1: Add a flag ──\nThe plan is written.\n── handoff: planner → developer ──\nImplementing.\n── handoff to tester ──\n',
    );
  });

  it('plainText leaves plain text, list markers and snake_case alone', () => {
    assert.equal(plainText('a_b_c and 2 * 3\n- item\n1. first'), 'a_b_c and 2 * 3\n- item\n1. first');
    assert.equal(plainText('# Title\n**bold** _em_ `code`'), 'Title\nbold em code');
  });
});
