/**
 * The status bar: breadcrumb (shortened from the left, never mid-word) and state icon, tooltip,
 * what a click does, the countdown beside the breadcrumb, the server's reason for a change (shown
 * for a while, on the injected clock), and which task it shows (never a subagent).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BreadcrumbItem, StatusParams } from '../../src/protocol';
import { CRUMB_CHARS, REASON_MILLIS, StatusBar, renderStatus, shortenLeft, shortenRight, width } from '../../src/status';
import { TaskStore } from '../../src/tasks';
import { FakeVs, ManualClock, type FakeStatusBarItem } from './fake-vscode';
import { statusOf, viewOf } from './fixtures';

const PLAN: BreadcrumbItem[] = [{ name: 'Feature', phaseName: 'Plan', emoji: '📋', index: 1, total: 4 }];
const TEST: BreadcrumbItem[] = [{ name: 'Feature', phaseName: 'Test', emoji: '🧪', index: 3, total: 4 }];
const NESTED: BreadcrumbItem[] = [
  { name: 'Feature', phaseName: 'Review', emoji: '', index: 4, total: 4 },
  { name: 'Review', phaseName: 'Static Analysis', emoji: '🔍', index: 1, total: 2 },
];

let seq = 0;
function status(state: string, text: string, extra: Partial<StatusParams> = {}): StatusParams {
  seq += 1;
  return statusOf({ taskId: 'task-1', seq, state, breadcrumb: PLAN, text, breadcrumbText: 'Feature > 📋 Plan [1/4]', workflow: 'feature', ...extra });
}

function setup(): { vs: FakeVs; clock: ManualClock; store: TaskStore; bar: StatusBar; item: FakeStatusBarItem } {
  const vs = new FakeVs();
  const clock = new ManualClock();
  const store = new TaskStore(clock);
  const bar = new StatusBar(vs, clock, store);
  bar.setServerState('running');
  const item = vs.statusBarItems[0];
  assert.ok(item, 'a status bar item is created');
  return { vs, clock, store, bar, item };
}

describe('status bar', () => {
  it('shows the breadcrumb behind the running icon, and a click opens the task output', () => {
    const { store, item } = setup();
    store.started('task-1', 'Add a --shout flag', 'feature');
    store.status(status('running', 'Feature > 📋 Plan [1/4]'));
    assert.equal(item.text, '$(sync~spin) Feature › 📋 Plan [1/4]');
    assert.equal(item.visible, true);
    assert.equal(item.commandId(), 'rawko.showOutput');
    assert.deepEqual(item.commandArgs(), ['task-1']);
    assert.equal(item.backgroundId(), undefined);
  });

  it("an external agent's session names its agent, as rawko words it, in the text and the tooltip", () => {
    const { store, item } = setup();
    const external = { taskId: 'ext-gemini-1', external: true, externalAgent: 'gemini', externalAgentName: 'Gemini CLI' };
    store.status(status('running', 'Feature > 📋 Plan [1/4]', external));
    assert.equal(item.text, '$(sync~spin) Gemini CLI: Feature › 📋 Plan [1/4]');
    assert.match(item.tooltipText(), /Agent: Gemini CLI/);
    const own = setup();
    own.store.status(status('running', 'Feature > 📋 Plan [1/4]'));
    assert.equal(own.item.text, '$(sync~spin) Feature › 📋 Plan [1/4]', "rawko's own task names no agent");
    assert.doesNotMatch(own.item.tooltipText(), /Agent:/);
  });

  it('names the task, the full breadcrumb, the phase, the state and the reason in the tooltip', () => {
    const { store, item } = setup();
    store.started('task-1', 'Add a --shout flag', 'feature');
    const line = 'Feature > Review [4/4] > 🔍 Static Analysis [1/2]';
    store.status(status('waiting_approval', line, { breadcrumb: NESTED, breadcrumbText: line, reason: 'Write is blocked in the Static Analysis phase' }));
    const tooltip = item.tooltipText();
    assert.match(tooltip, /Task: Add a --shout flag/);
    assert.match(tooltip, /Breadcrumb: Feature > Review \[4\/4\] > 🔍 Static Analysis \[1\/2\]/);
    assert.match(tooltip, /Phase: 🔍 Static Analysis \[1\/2\] in Review/);
    assert.match(tooltip, /State: waiting approval/);
    assert.match(tooltip, /Reason: Write is blocked in the Static Analysis phase/);
    assert.match(tooltip, /Click to answer the approval/);
  });

  it('shows the levels rawko gives, joined and shortened by whole levels, not its items', () => {
    const { store, item } = setup();
    const line = 'Release Train For The Quarterly Platform Update > Code Review [2/3] > 🔍 Static Analysis [1/2]';
    const levels = ['Release Train For The Quarterly Platform Update', 'Code Review [2/3]', '🔍 Static Analysis [1/2]'];
    store.status(status('running', line, { breadcrumb: [], breadcrumbText: line, breadcrumbLevels: levels }));
    assert.equal(item.text, '$(sync~spin) … › Code Review [2/3] › 🔍 Static Analysis [1/2]');
  });

  it('counts the other tasks rawko calls busy, whatever their state is named', () => {
    const { store, item } = setup();
    store.started('task-1', 'Add a flag', 'feature');
    store.status(status('running', 'Feature > 📋 Plan [1/4]'));
    store.status(statusOf({ taskId: 'other', seq: 1, state: 'thinking', stateClass: 'busy', breadcrumb: [], text: 'x', breadcrumbText: 'x' }));
    store.status(statusOf({ taskId: 'old', seq: 1, state: 'complete', stateClass: 'finished', breadcrumb: [], text: 'y', breadcrumbText: 'y' }));
    assert.equal(item.text, '$(sync~spin) Feature › 📋 Plan [1/4] (+1)');
  });

  it('shortens a long breadcrumb from the left by whole levels, and keeps the whole of it in the tooltip', () => {
    const { store, item } = setup();
    const breadcrumb: BreadcrumbItem[] = [
      { name: 'Release Train For The Quarterly Platform Update', phaseName: 'Code Review', emoji: '', index: 2, total: 3 },
      { name: 'Code Review', phaseName: 'Static Analysis', emoji: '🔍', index: 1, total: 2 },
    ];
    const line = 'Release Train For The Quarterly Platform Update > Code Review [2/3] > 🔍 Static Analysis [1/2]';
    store.status(status('running', line, { breadcrumb, breadcrumbText: line }));
    assert.equal(item.text, '$(sync~spin) … › Code Review [2/3] › 🔍 Static Analysis [1/2]');
    assert.match(item.tooltipText(), /Breadcrumb: Release Train For The Quarterly Platform Update > Code Review/);
  });

  it('shortenLeft drops levels, then words, never part of one', () => {
    const levels = ['Release', 'Code Review [2/3]', '🔍 Static Analysis [1/2]'];
    assert.equal(shortenLeft(levels, 60), 'Release › Code Review [2/3] › 🔍 Static Analysis [1/2]');
    assert.equal(shortenLeft(levels, 50), '… › Code Review [2/3] › 🔍 Static Analysis [1/2]');
    assert.equal(shortenLeft(levels, 30), '… › 🔍 Static Analysis [1/2]');
    assert.equal(shortenLeft(levels, 20), '…Analysis [1/2]');
    const long = shortenLeft(['Feature', 'An extremely long phase name that goes on and on and on [1/4]'], CRUMB_CHARS);
    assert.ok(width(long) <= CRUMB_CHARS, long);
    assert.ok(long.endsWith(' on and on [1/4]') && long.startsWith('…'), long);
    assert.ok(/^…\S/.test(long) && 'An extremely long phase name that goes on and on and on [1/4]'.includes(long.slice(1)), long);
  });

  it('shortenRight keeps whole words from the start', () => {
    assert.equal(shortenRight('approval of Write timed out after 120 s; rejected once', 40), 'approval of Write timed out after 120…');
    assert.equal(shortenRight('short\nsecond line', 40), 'short');
  });

  const icons: [string, string][] = [
    ['running', '$(sync~spin)'],
    ['waiting_approval', '$(shield)'],
    ['countdown', '$(watch)'],
    ['blocked', '$(debug-pause)'],
    ['interrupted', '$(debug-disconnect)'],
    ['complete', '$(check)'],
    ['failed', '$(error)'],
    ['cancelled', '$(circle-slash)'],
  ];
  for (const [state, icon] of icons) {
    it(`shows the ${state} state with ${icon}`, () => {
      const { store, item } = setup();
      store.status(status(state, `Feature > 📋 Plan [1/4] — ${state}`));
      assert.ok(item.text.startsWith(`${icon} Feature › 📋 Plan [1/4]`), item.text);
    });
  }

  it('an unknown state gets a question mark and does not throw', () => {
    const { store, item } = setup();
    store.status(status('pondering', 'Feature > 📋 Plan [1/4]'));
    assert.equal(item.text, '$(question) Feature › 📋 Plan [1/4]');
  });

  it('waiting for approval: warning colour, a click answers the approval', () => {
    const { store, item } = setup();
    store.status(status('waiting_approval', 'Feature > 📋 Plan [1/4] — waiting for approval'));
    assert.equal(item.backgroundId(), 'statusBarItem.warningBackground');
    assert.equal(item.commandId(), 'rawko.showApproval');
    assert.deepEqual(item.commandArgs(), ['task-1']);
  });

  it('a failed task is shown in the error colour', () => {
    const { store, item } = setup();
    store.status(status('failed', 'Feature > 📋 Plan [1/4] — failed'));
    assert.equal(item.backgroundId(), 'statusBarItem.errorBackground');
  });

  it('counts down beside the breadcrumb, a click interrupts, and the countdown ends with the next status', () => {
    const { store, item } = setup();
    const test = { breadcrumb: TEST, breadcrumbText: 'Feature > 🧪 Test [3/4]' };
    store.status(status('countdown', 'Feature > 🧪 Test [3/4] — auto-continuing', test));
    for (const left of [3, 2, 1]) {
      seq += 1;
      store.countdown({ taskId: 'task-1', seq, secondsLeft: left, text: `⏳ Auto-continuing in ${left}s — interrupt to stop`, label: `⏳ Auto-continuing in ${left}s` });
      assert.equal(item.text, `⏳ ${left}s — Feature › 🧪 Test [3/4]`);
      assert.equal(item.commandId(), 'rawko.interrupt');
      assert.deepEqual(item.commandArgs(), ['task-1']);
      assert.match(item.tooltipText(), new RegExp(`State: countdown — ⏳ Auto-continuing in ${left}s`));
      assert.match(item.tooltipText(), /Click to interrupt the countdown/);
    }
    store.status(status('running', 'Feature > 🧪 Test [3/4]', test));
    assert.equal(item.text, '$(sync~spin) Feature › 🧪 Test [3/4]');
    assert.equal(item.commandId(), 'rawko.showOutput');
    assert.equal(store.get('task-1')?.countdown, undefined);
  });

  it('says why an approval was rejected, for a while, then only in the tooltip', () => {
    const { clock, store, item } = setup();
    store.status(status('waiting_approval', 'Feature > 📋 Plan [1/4] — waiting for approval'));
    const reason = 'approval of Write timed out after 120 s; rejected once';
    store.status(status('running', 'Feature > 📋 Plan [1/4]', { reason }));
    assert.equal(item.text, '$(sync~spin) Feature › 📋 Plan [1/4] — approval of Write timed out after 120…');
    clock.advance(REASON_MILLIS - 1);
    assert.ok(item.text.includes('approval of Write'), item.text);
    clock.advance(1);
    assert.equal(item.text, '$(sync~spin) Feature › 📋 Plan [1/4]');
    assert.match(item.tooltipText(), /Reason: approval of Write timed out after 120 s; rejected once/);
    assert.equal(clock.pending(), 0);
  });

  it('drops an old reason when the task moves on', () => {
    const { store, item } = setup();
    store.status(status('waiting_approval', 'Feature > 📋 Plan [1/4] — waiting for approval', { reason: 'Write is blocked in the Plan phase' }));
    assert.ok(item.text.includes('Write is blocked'), item.text);
    store.status(status('complete', 'Feature — complete', { breadcrumb: [], breadcrumbText: 'Feature' }));
    assert.equal(item.text, '$(check) Feature');
  });

  it('keeps a rejection\'s reason through the changes that follow, its end included', () => {
    const { store, item } = setup();
    store.status(status('waiting_approval', 'Feature > 📋 Plan [1/4] — waiting for approval', { reason: 'Write is blocked in the Plan phase' }));
    const reason = 'no answer within 3 s; Write was rejected';
    store.status(status('running', 'Feature > 📋 Plan [1/4]', { reason }));
    const implement = [{ name: 'Feature', phaseName: 'Implement', emoji: '🛠️', index: 2, total: 4 }];
    store.status(status('running', 'Feature > 🛠️ Implement [2/4]', { breadcrumb: implement }));
    assert.equal(item.text, `$(sync~spin) Feature › 🛠️ Implement [2/4] — ${reason}`);
    // The end can come in the same moment (rawko announces a quick task's rest at once): the
    // reason stays for its while.
    store.status(status('complete', 'Feature — complete', { breadcrumb: [], breadcrumbText: 'Feature' }));
    assert.equal(item.text, `$(check) Feature — ${reason}`);
  });

  it('a task without a workflow shows its description, from the start', () => {
    const { store, item } = setup();
    store.started('task-1', 'Explain the build', undefined);
    assert.equal(item.text, '$(sync~spin) Explain the build');
    const plain = { taskId: 'task-1', breadcrumb: [], breadcrumbText: 'Explain the build' };
    store.status(statusOf({ ...plain, seq: 1, state: 'waiting_approval', text: 'Explain the build — waiting for approval' }));
    assert.equal(item.text, '$(shield) Explain the build');
    store.status(statusOf({ ...plain, seq: 2, state: 'complete', text: 'Explain the build — complete' }));
    assert.equal(item.text, '$(check) Explain the build');
  });

  it('without a task: ready, starting, stopped, not installed', () => {
    const { bar, item } = setup();
    assert.equal(item.text, '$(hubot) rawko');
    assert.equal(item.commandId(), 'rawko.start');
    bar.setServerState('starting');
    assert.equal(item.text, '$(loading~spin) rawko');
    bar.setServerState('stopped');
    assert.equal(item.text, '$(warning) rawko stopped');
    assert.equal(item.commandId(), 'rawko.restartServer');
    bar.setServerState('missing');
    assert.equal(item.text, '$(warning) rawko not installed');
    assert.match(item.tooltipText(), /rawko.server.path/);
  });

  it('follows the task started here, and a task that shows up while none runs', () => {
    const { store, item } = setup();
    store.status(statusOf({ taskId: 'external', seq: 1, state: 'running', breadcrumb: [], text: 'Docs > ✍️ Write [1/2]', breadcrumbText: 'Docs > ✍️ Write [1/2]' }));
    assert.ok(item.text.includes('Docs'), 'a task started elsewhere is shown when nothing else is');
    store.started('task-1', 'Add a flag', 'feature');
    store.status(status('running', 'Feature > 📋 Plan [1/4]'));
    store.status(statusOf({ taskId: 'external', seq: 2, state: 'running', breadcrumb: [], text: 'Docs > ✍️ Write [2/2]', breadcrumbText: 'Docs > ✍️ Write [2/2]' }));
    assert.equal(item.text, '$(sync~spin) Feature › 📋 Plan [1/4] (+1)', 'the active task keeps the status bar');
    store.status(status('complete', 'Feature — complete'));
    store.status(statusOf({ taskId: 'external', seq: 3, state: 'running', breadcrumb: [], text: 'Docs > ✍️ Write [2/2]', breadcrumbText: 'Docs > ✍️ Write [2/2]' }));
    assert.equal(item.text, '$(sync~spin) Docs > ✍️ Write [2/2]', 'a running task takes over from a finished one');
  });

  it("ignores a subagent's statuses: the parent keeps the status bar, and a subagent counts as no other task", () => {
    const { store, item } = setup();
    store.started('task-1', 'Add a flag', 'feature');
    store.status(status('running', 'Feature > 📋 Plan [1/4]'));
    const subagent = { parentTaskId: 'task-1', toolCallId: 'call-7', index: 0, profile: 'reviewer', name: 'reviewer', label: 'reviewer (subagent of task-1)', phaseIndex: 0 };
    const sub = (n: number, state: string): StatusParams =>
      statusOf({ taskId: 'task-2', seq: n, state, breadcrumb: [], text: `Review${n}`, breadcrumbText: `Review${n}`, subagent });
    store.status(sub(1, 'running'));
    store.status(sub(2, 'waiting_approval'));
    assert.equal(item.text, '$(sync~spin) Feature › 📋 Plan [1/4]');
    assert.equal(item.commandId(), 'rawko.showOutput');
    assert.deepEqual(item.commandArgs(), ['task-1']);
    // The parent ends: a subagent's status that comes after still does not take the status bar.
    store.status(status('complete', 'Feature — complete'));
    store.status(sub(3, 'running'));
    assert.equal(item.text, '$(check) Feature › 📋 Plan [1/4]');
    // Following a subagent's output: its parent stands for it.
    store.setActive('task-2');
    assert.equal(item.text, '$(check) Feature › 📋 Plan [1/4]');
    assert.deepEqual(item.commandArgs(), ['task-1']);
  });

  it("a subagent whose parent is not known does not take the status bar", () => {
    const { store, item } = setup();
    const subagent = { parentTaskId: 'task-9', toolCallId: 'call-7', index: 0, profile: 'reviewer', name: 'reviewer', label: 'reviewer (subagent of task-9)' };
    store.status(statusOf({ taskId: 'task-2', seq: 1, state: 'running', breadcrumb: [], text: 'Review', breadcrumbText: 'Review', subagent }));
    assert.equal(item.text, '$(hubot) rawko');
    store.status(statusOf({ taskId: 'other', seq: 1, state: 'running', breadcrumb: [], text: 'Docs', breadcrumbText: 'Docs' }));
    assert.equal(item.text, '$(sync~spin) Docs');
  });

  it('renderStatus is pure: a finished task keeps its summary in the tooltip', () => {
    const look = renderStatus(
      'running',
      viewOf({ taskId: 't', state: 'complete', breadcrumb: [], breadcrumbText: 'Feature', text: 'Feature — complete', summary: 'All done' }),
      0,
    );
    assert.equal(look.text, '$(check) Feature');
    assert.deepEqual(look.tooltip.rows.find(([label]) => label === 'Summary'), ['Summary', 'All done']);
  });

  it('disposes its item and timers', () => {
    const { clock, store, bar, item } = setup();
    store.status(status('running', 'Feature > 📋 Plan [1/4]', { reason: 'resumed' }));
    bar.dispose();
    assert.equal(item.disposed, true);
    clock.advance(REASON_MILLIS * 2);
    assert.equal(clock.pending(), 0);
  });
});
