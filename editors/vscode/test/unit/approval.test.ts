/**
 * Inline approval: what the prompt shows, how each choice is answered, the diff preview, the
 * server withdrawing a request (the prompt goes away), requests waiting in line, the time
 * left on the injected clock, and a subagent's label.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Approvals, approvalDetail, formatLeft, type CancellationTokenLike } from '../../src/approval';
import type { ApprovalOutcome, ApproveToolCallParams } from '../../src/protocol';
import { FakeVs, ManualClock } from './fake-vscode';
import { timeoutWords } from './fixtures';

const ALL = ['allow_once', 'allow_always', 'reject_once', 'reject_always'];
/** The ManualClock's start. */
const NOW = new ManualClock().now();

/** A request as rawko sends it: its deadline 120 s after the clock's start, unless `extra` says. */
function request(extra: Partial<ApproveToolCallParams> = {}): ApproveToolCallParams {
  return {
    taskId: 'task-1',
    toolCallId: 'call-2',
    tool: 'Write',
    input: { path: 'PLAN.md', content: '1. add --shout\n2. test it\n' },
    phase: 'Plan',
    reason: 'Feature is in phase Plan, which allows only: Read, Glob, Grep. Refer to the current phase and call workflow_step.',
    detail: 'Write is blocked in the Plan phase (allowed: Read, Glob, Grep)',
    options: ALL,
    summary: 'Write PLAN.md (26 bytes)',
    expiresAt: NOW + 120_000,
    timeoutSeconds: 120,
    ...timeoutWords(120),
    ...extra,
  };
}

const BASH = { tool: 'Bash', input: { command: 'make' }, summary: 'Bash make' };

/** A cancellation token the test withdraws by hand, like rawko's `$/cancelRequest`. */
class Token implements CancellationTokenLike {
  isCancellationRequested = false;
  private listeners: (() => void)[] = [];
  onCancellationRequested(listener: () => void): { dispose(): void } {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }
  cancel(): void {
    this.isCancellationRequested = true;
    for (const l of [...this.listeners]) l();
  }
}

function setup() {
  const vs = new FakeVs();
  const clock = new ManualClock();
  const diffs: ApproveToolCallParams[] = [];
  const withdrawn: ApproveToolCallParams[] = [];
  const answered: [string, ApprovalOutcome][] = [];
  const approvals = new Approvals(vs, clock, {
    openDiff: (params) => {
      diffs.push(params);
      return Promise.resolve();
    },
    onWithdrawn: (params) => withdrawn.push(params),
    onAnswered: (params, outcome) => answered.push([params.tool, outcome]),
  });
  return { vs, clock, approvals, diffs, withdrawn, answered };
}

describe('approval prompt', () => {
  it('counts down in rawko\'s words, and closes when rawko names the withdrawn tool call', async () => {
    const { vs, approvals, withdrawn } = setup();
    const answer = approvals.ask(request({ timeoutLabel: 'refused in' }), new Token());
    assert.equal(vs.visiblePick()?.title, 'rawko: Write PLAN.md (26 bytes) — blocked in phase Plan (refused in 2:00)');
    approvals.withdraw('task-1', 'call-other');
    assert.ok(vs.visiblePick(), 'another tool call\'s withdrawal leaves the prompt');
    approvals.withdraw('task-1', 'call-2');
    assert.deepEqual(await answer, { outcome: 'cancelled' });
    assert.equal(vs.visiblePick(), undefined, 'the prompt is closed');
    assert.equal(withdrawn.length, 1);
  });

  it('shows rawko\'s summary of the call, the phase, the time left and the reason for people in full', () => {
    const { vs, approvals } = setup();
    void approvals.ask(request(), new Token());
    const pick = vs.visiblePick();
    assert.ok(pick, 'the prompt is shown');
    assert.equal(pick.title, 'rawko: Write PLAN.md (26 bytes) — blocked in phase Plan (denied in 2:00)');
    assert.equal(pick.prompt, 'Write is blocked in the Plan phase (allowed: Read, Glob, Grep)');
    assert.ok(!pick.placeholder?.includes('workflow_step'), 'the text written for the model is not shown');
    assert.equal(pick.ignoreFocusOut, true, 'the prompt stays when the focus moves away');
    assert.deepEqual(pick.labels(), [
      '$(close) Deny',
      '$(circle-slash) Always deny',
      '$(check) Allow once',
      '$(check-all) Always allow',
      '',
      '$(diff) Open diff preview',
    ]);
  });

  it("names the subagent whose call waits: its label in the title and at the start of the reason", () => {
    const { vs, approvals } = setup();
    const subagent = { parentTaskId: 'task-1', toolCallId: 'call-7', index: 0, profile: 'reviewer', name: 'reviewer', label: 'reviewer (subagent of task-1)' };
    const detail = 'reviewer (subagent of task-1): Write is blocked in the Plan phase (allowed: Read, Glob, Grep)';
    void approvals.ask(request({ taskId: 'task-2', subagent, detail }), new Token());
    const pick = vs.visiblePick();
    assert.ok(pick);
    assert.equal(pick.title, 'rawko: reviewer (subagent of task-1): Write PLAN.md (26 bytes) — blocked in phase Plan (denied in 2:00)');
    assert.equal(pick.prompt, detail, 'the label rawko put first is not repeated');
    assert.equal(approvalDetail(request({ subagent, detail: 'Write is blocked' })), 'reviewer (subagent of task-1): Write is blocked', 'added when missing');
    assert.equal(approvalDetail(request({ detail: 'Write is blocked' })), 'Write is blocked', 'a task that is no subagent has no label');
  });

  it('has no option active: Enter alone answers nothing', () => {
    const { vs, approvals, answered } = setup();
    void approvals.ask(request(), new Token());
    const pick = vs.visiblePick();
    assert.ok(pick);
    assert.deepEqual(pick.activeItems, []);
    pick.enter();
    assert.deepEqual(answered, []);
    assert.equal(approvals.waiting().length, 1);
    assert.equal(pick.visible, true);
  });

  it('puts the reason in the placeholder where VS Code has no prompt line, and takes the model\'s from an older rawko', () => {
    const { vs, approvals } = setup();
    vs.version = '1.91.1';
    void approvals.ask(request({ detail: '' }), new Token());
    const pick = vs.visiblePick();
    assert.equal(pick?.prompt, undefined);
    assert.equal(pick?.placeholder, request().reason);
  });

  const choices: [string, ApprovalOutcome][] = [
    ['Allow once', 'allow_once'],
    ['Always allow', 'allow_always'],
    ['Deny', 'reject_once'],
    ['Always deny', 'reject_always'],
  ];
  for (const [label, outcome] of choices) {
    it(`${label} answers ${outcome} and closes the prompt`, async () => {
      const { vs, approvals, answered } = setup();
      const answer = approvals.ask(request(), new Token());
      const pick = vs.visiblePick();
      assert.ok(pick);
      pick.pick(label === 'Deny' ? '$(close) Deny' : label);
      assert.deepEqual(await answer, { outcome });
      assert.equal(pick.visible, false);
      assert.equal(pick.disposed, true);
      assert.deepEqual(answered, [['Write', outcome]]);
      assert.equal(approvals.waiting().length, 0);
    });
  }

  it('offers only the options the server sent', () => {
    const { vs, approvals } = setup();
    void approvals.ask(request({ ...BASH, options: ['allow_once', 'reject_once'] }), new Token());
    assert.deepEqual(vs.visiblePick()?.labels(), ['$(close) Deny', '$(check) Allow once']);
  });

  it('opens a diff preview for Write and Edit and keeps the prompt open', async () => {
    const { vs, approvals, diffs } = setup();
    const answer = approvals.ask(request({ tool: 'Edit', input: { path: 'greet.sh', old_text: 'a', new_text: 'b' } }), new Token());
    const pick = vs.visiblePick();
    assert.ok(pick);
    pick.pick('Open diff preview');
    await Promise.resolve();
    assert.equal(diffs.length, 1);
    assert.equal(diffs[0]?.tool, 'Edit');
    assert.equal(vs.visiblePick(), pick, 'the prompt is still there');
    assert.equal(approvals.waiting().length, 1);
    pick.pick('Allow once');
    assert.deepEqual(await answer, { outcome: 'allow_once' });
  });

  it('has no diff preview for other tools', () => {
    const { vs, approvals } = setup();
    void approvals.ask(request({ tool: 'Read', input: { path: 'README.md' } }), new Token());
    assert.ok(!vs.visiblePick()?.labels().some((l) => l.includes('diff')));
  });

  it('goes away when rawko withdraws the request (timeout)', async () => {
    const { vs, approvals, withdrawn } = setup();
    const token = new Token();
    const answer = approvals.ask(request(), token);
    const pick = vs.visiblePick();
    assert.ok(pick);
    token.cancel();
    assert.deepEqual(await answer, { outcome: 'cancelled' });
    assert.equal(pick.visible, false, 'the prompt went away');
    assert.equal(vs.visiblePick(), undefined);
    assert.equal(withdrawn.length, 1);
    assert.equal(approvals.waiting().length, 0);
  });

  it('answers a request withdrawn before it was shown without showing it', async () => {
    const { vs, approvals } = setup();
    const token = new Token();
    token.cancel();
    assert.deepEqual(await approvals.ask(request(), token), { outcome: 'cancelled' });
    assert.equal(vs.quickPicks.length, 0);
  });

  it('shows requests one after the other', async () => {
    const { vs, approvals } = setup();
    const first = approvals.ask(request(), new Token());
    const second = approvals.ask(request({ taskId: 'task-2', ...BASH }), new Token());
    assert.equal(vs.quickPicks.length, 1, 'one prompt at a time');
    assert.match(vs.visiblePick()?.title ?? '', /\[\+1 waiting\]$/);
    vs.visiblePick()?.pick('Allow once');
    assert.deepEqual(await first, { outcome: 'allow_once' });
    assert.equal(vs.visiblePick()?.title, 'rawko: Bash make — blocked in phase Plan (denied in 2:00)');
    vs.visiblePick()?.pick('$(close) Deny');
    assert.deepEqual(await second, { outcome: 'reject_once' });
    assert.equal(vs.visiblePick(), undefined);
  });

  it('withdrawing a waiting request leaves the shown one alone', async () => {
    const { vs, approvals } = setup();
    const shown = approvals.ask(request(), new Token());
    const waitingToken = new Token();
    const waiting = approvals.ask(request({ taskId: 'task-2' }), waitingToken);
    const pick = vs.visiblePick();
    waitingToken.cancel();
    assert.deepEqual(await waiting, { outcome: 'cancelled' });
    assert.equal(vs.visiblePick(), pick);
    pick?.pick('Allow once');
    assert.deepEqual(await shown, { outcome: 'allow_once' });
  });

  it('hiding the prompt answers nothing; the status bar can show it again', async () => {
    const { vs, approvals } = setup();
    const answer = approvals.ask(request(), new Token());
    vs.visiblePick()?.hide();
    assert.equal(vs.visiblePick(), undefined);
    assert.equal(approvals.waiting('task-1').length, 1, 'still pending');
    assert.equal(approvals.reveal('task-1'), true);
    vs.visiblePick()?.pick('Always allow');
    assert.deepEqual(await answer, { outcome: 'allow_always' });
    assert.equal(approvals.reveal(), false, 'nothing left to show');
  });

  it('reveal brings the asked task to the front', async () => {
    const { vs, approvals } = setup();
    const first = approvals.ask(request({ tool: 'Write' }), new Token());
    const second = approvals.ask(request({ taskId: 'task-2', ...BASH }), new Token());
    approvals.reveal('task-2');
    assert.match(vs.visiblePick()?.title ?? '', /Bash make/);
    vs.visiblePick()?.pick('Allow once');
    assert.deepEqual(await second, { outcome: 'allow_once' });
    assert.match(vs.visiblePick()?.title ?? '', /Write PLAN.md/);
    vs.visiblePick()?.pick('$(close) Deny');
    assert.deepEqual(await first, { outcome: 'reject_once' });
  });

  it('counts down to rawko\'s deadline on the clock and stops at zero', async () => {
    const { vs, clock, approvals } = setup();
    // A 3 s timeout set only in rawko's config: the request carries it.
    const answer = approvals.ask(request({ expiresAt: NOW + 3000, timeoutSeconds: 3 }), new Token());
    const pick = vs.visiblePick();
    assert.match(pick?.title ?? '', /\(denied in 0:03\)$/);
    clock.advance(1000);
    assert.match(pick?.title ?? '', /\(denied in 0:02\)$/);
    clock.advance(1000);
    assert.match(pick?.title ?? '', /\(denied in 0:01\)$/);
    clock.advance(1000);
    assert.match(pick?.title ?? '', /\(timing out\)$/);
    assert.equal(clock.pending(), 0, 'the ticker stopped itself from inside its callback');
    clock.advance(5000);
    assert.equal(pick?.visible, true, 'the server, not the client, decides the timeout');
    pick?.pick('Allow once');
    assert.deepEqual(await answer, { outcome: 'allow_once' });
  });

  it('counts from the deadline, not from when the prompt was shown', () => {
    const { vs, clock, approvals } = setup();
    void approvals.ask(request(), new Token());
    // The second request waited in line for 61 s before it was shown.
    void approvals.ask(request({ taskId: 'task-2', ...BASH }), new Token());
    clock.advance(61_000);
    vs.visiblePick()?.pick('Allow once');
    assert.equal(vs.visiblePick()?.title, 'rawko: Bash make — blocked in phase Plan (denied in 0:59)');
  });

  it('an answer stops the ticker', async () => {
    const { vs, clock, approvals } = setup();
    const answer = approvals.ask(request(), new Token());
    clock.advance(1500);
    vs.visiblePick()?.pick('Allow once');
    await answer;
    assert.equal(clock.pending(), 0);
  });

  it('dispose answers every pending request cancelled and closes the prompt', async () => {
    const { vs, approvals } = setup();
    const a = approvals.ask(request(), new Token());
    const b = approvals.ask(request({ taskId: 'task-2' }), new Token());
    approvals.dispose();
    assert.deepEqual(await a, { outcome: 'cancelled' });
    assert.deepEqual(await b, { outcome: 'cancelled' });
    assert.equal(vs.visiblePick(), undefined);
  });

  it('the Rawko view lists the waiting requests and answers one: the prompt closes, the next shows', async () => {
    const { vs, approvals, answered } = setup();
    let changes = 0;
    approvals.onDidChange(() => (changes += 1));
    const a = approvals.ask(request(), new Token());
    const b = approvals.ask(request({ taskId: 'task-2', toolCallId: 'call-9', ...BASH }), new Token());
    assert.deepEqual(approvals.waiting().map((p) => p.toolCallId), ['call-2', 'call-9']);
    assert.deepEqual(approvals.waiting('task-2').map((p) => p.tool), ['Bash']);
    const first = vs.visiblePick();
    assert.equal(approvals.answer('task-1', 'call-2', 'reject_once'), true);
    assert.deepEqual(await a, { outcome: 'reject_once' });
    assert.equal(first?.disposed, true);
    assert.match(vs.visiblePick()?.title ?? '', /Bash make/);
    assert.equal(approvals.answer('task-1', 'call-2', 'allow_once'), false, 'an answered request is not answered twice');
    assert.deepEqual(answered, [['Write', 'reject_once']]);
    assert.equal(changes, 3);
    vs.visiblePick()?.pick('Allow once');
    assert.deepEqual(await b, { outcome: 'allow_once' });
  });

  it('formats the time left', () => {
    assert.equal(formatLeft(120_000), '2:00');
    assert.equal(formatLeft(61_001), '1:02');
    assert.equal(formatLeft(-5), '0:00');
  });
});
