/**
 * The Rawko view: tasks with their state icon, description and elapsed time; under each, a
 * pending approval and the phases marked ✓ done, ▶ current, ○ to do (a nested workflow's under
 * it), the marks moving with `rawko/status`'s `phaseIndex`; the context menu's actions per state;
 * the phase tree asked for once per task and workflow; subagents under their parent's phase or
 * under their parent, at the top until the parent is known; an external agent's own subagents
 * (its session's output of kind `subagent`) under its task the same way; and nothing polled.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Approvals, type CancellationTokenLike } from '../../src/approval';
import type { ApproveToolCallParams, OutputParams, PhaseNode, StatusParams, SubagentInfo, TaskDetail } from '../../src/protocol';
import { subagentStopped, TaskStore } from '../../src/tasks';
import { externalSubagentRow, formatElapsed, phaseRows, TaskTree, taskActions, taskRow, type TreeNode } from '../../src/tree';
import { FakeVs, fakeTreeVs, ManualClock, type FakeTreeItem } from './fake-vscode';
import { look, statusOf, timeoutWords, viewOf } from './fixtures';

/** The starter `feature` workflow: plan, implement, test, then the review subworkflow. */
const PHASES: PhaseNode[] = [
  { kind: 'phase', index: 0, name: 'Plan', emoji: '📋', depth: 0, status: 'current', breadcrumbText: 'Feature > 📋 Plan [1/4]' },
  { kind: 'phase', index: 1, name: 'Implement', emoji: '🛠️', depth: 0, status: 'todo', breadcrumbText: 'Feature > 🛠️ Implement [2/4]' },
  { kind: 'phase', index: 2, name: 'Test', emoji: '🧪', depth: 0, status: 'todo', breadcrumbText: 'Feature > 🧪 Test [3/4]' },
  { kind: 'scope', name: 'Review', depth: 0, status: 'todo', breadcrumbText: 'Feature > Review [4/4]' },
  { kind: 'phase', index: 3, name: 'Check', emoji: '🔎', depth: 1, status: 'todo', breadcrumbText: 'Feature > Review [4/4] > 🔎 Check [1/2]' },
  { kind: 'phase', index: 4, name: 'Fix', depth: 1, status: 'todo', breadcrumbText: 'Feature > Review [4/4] > Fix [2/2]' },
];

const START = new ManualClock().now();

function detail(extra: Partial<TaskDetail> = {}): TaskDetail {
  return {
    taskId: 'task-1',
    description: 'Add a --shout flag',
    workflow: 'feature',
    state: 'running',
    breadcrumbText: 'Feature > 📋 Plan [1/4]',
    startedAt: START - 65_000,
    breadcrumb: [],
    history: [],
    phases: PHASES,
    ...look(extra.state ?? 'running', extra.breadcrumbText ?? 'Feature > 📋 Plan [1/4]', extra.taskId, extra.breadcrumb, 'workflow' in extra ? extra.workflow : 'feature'),
    ...extra,
  };
}

let seq = 0;
function status(extra: Partial<StatusParams>): StatusParams {
  seq += 1;
  return statusOf({ taskId: 'task-1', seq, state: 'running', breadcrumb: [], text: '', breadcrumbText: '', workflow: 'feature', ...extra });
}

const never: CancellationTokenLike = { isCancellationRequested: false, onCancellationRequested: () => ({ dispose: () => undefined }) };

function approval(extra: Partial<ApproveToolCallParams> = {}): ApproveToolCallParams {
  return {
    taskId: 'task-1',
    toolCallId: 'call-2',
    tool: 'Write',
    input: { path: 'PLAN.md', content: 'plan' },
    phase: 'Plan',
    reason: 'Refer to the current phase and call workflow_step.',
    detail: 'Write is blocked in the Plan phase (allowed: Read, Glob, Grep)',
    options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'],
    summary: 'Write PLAN.md (4 bytes)',
    expiresAt: START + 120_000,
    timeoutSeconds: 120,
    ...timeoutWords(120),
    ...extra,
  };
}

/** What rawko says of the subagent `taskId` that task-1's call-7 started. */
function subagentOf(index: number, extra: Partial<SubagentInfo> = {}): SubagentInfo {
  return {
    parentTaskId: 'task-1',
    toolCallId: 'call-7',
    index,
    profile: 'reviewer',
    name: 'reviewer',
    label: 'reviewer (subagent of task-1)',
    phaseIndex: 0,
    ...extra,
  };
}

/** A subagent's status: it runs no workflow of its own. */
function subStatus(taskId: string, subagent: SubagentInfo, extra: Partial<StatusParams> = {}): StatusParams {
  return status({ taskId, workflow: undefined, breadcrumbText: 'Review the change', subagent, ...extra });
}

/** What rawko says when an external agent's own subagent `agentId` of type `agent` starts or stops. */
function extSub(taskId: string, agent: string, agentId: string, verb: 'started' | 'stopped'): OutputParams {
  seq += 1;
  return { taskId, seq, kind: 'subagent', text: `subagent ${agent} ${verb} (${agentId})`, agent, agentId };
}

function setup() {
  const clock = new ManualClock();
  const store = new TaskStore(clock);
  const approvals = new Approvals(new FakeVs(), clock, { openDiff: () => Promise.resolve() });
  const wanted: string[] = [];
  const tree = new TaskTree(fakeTreeVs, clock, store, approvals, (id) => wanted.push(id));
  let changes = 0;
  tree.onDidChangeTreeData(() => (changes += 1));
  const item = (node: TreeNode): FakeTreeItem => tree.getTreeItem(node) as unknown as FakeTreeItem;
  const labels = (node?: TreeNode): string[] => tree.getChildren(node).map((n) => item(n).label);
  return { clock, store, approvals, tree, wanted, item, labels, changes: () => changes };
}

describe('the Rawko view', () => {
  it('marks the phases done, current and to do, a nested workflow\'s under it', () => {
    const { store, labels, tree } = setup();
    store.describe(detail());
    const [task] = tree.getChildren();
    assert.deepEqual(labels(task), ['▶ 📋 Plan', '○ 🛠️ Implement', '○ 🧪 Test', '○ Review']);
    store.status(status({ phaseIndex: 3 }));
    assert.deepEqual(labels(task), ['✓ 📋 Plan', '✓ 🛠️ Implement', '✓ 🧪 Test', '▶ Review']);
    const review = tree.getChildren(task)[3];
    assert.deepEqual(labels(review), ['▶ 🔎 Check', '○ Fix']);
    store.status(status({ phaseIndex: 4 }));
    assert.deepEqual(labels(review), ['✓ 🔎 Check', '▶ Fix']);
  });

  it('marks every phase done once the workflow finished (a status without a phase index)', () => {
    const { store, labels, tree } = setup();
    store.describe(detail());
    store.status(status({ phaseIndex: undefined }));
    const [task] = tree.getChildren();
    assert.deepEqual(labels(task), ['✓ 📋 Plan', '✓ 🛠️ Implement', '✓ 🧪 Test', '✓ Review']);
  });

  it('a cancelled task keeps the phases done before where it stopped, the rest to do', () => {
    const { store, labels, tree } = setup();
    store.describe(detail());
    store.status(status({ phaseIndex: 3 }));
    store.status(status({ state: 'cancelled', phaseIndex: undefined, phasesDone: 3 }));
    const [task] = tree.getChildren();
    assert.deepEqual(labels(task), ['✓ 📋 Plan', '✓ 🛠️ Implement', '✓ 🧪 Test', '○ Review']);
    const review = tree.getChildren(task)[3];
    assert.deepEqual(labels(review), ['○ 🔎 Check', '○ Fix']);
  });

  it('a phase opens its context prompt; a nested workflow holds its phases, expanded', () => {
    const { store, item, tree } = setup();
    store.describe(detail());
    const [task] = tree.getChildren();
    assert.ok(task);
    const [plan, , , review] = tree.getChildren(task);
    assert.ok(plan && review);
    assert.deepEqual(item(plan).command?.arguments, ['task-1', 0]);
    assert.equal(item(plan).command?.command, 'rawko.openPhasePrompt');
    assert.equal(item(plan).description, 'current');
    assert.equal(item(review).command, undefined);
    assert.equal(item(review).collapsibleState, 2);
    const fix = tree.getChildren(review)[1];
    assert.ok(fix);
    assert.deepEqual(item(fix).command?.arguments, ['task-1', 4]);
  });

  it("names an external session's agent beside its elapsed time", () => {
    const { store, item, tree } = setup();
    store.describe(detail({ taskId: 'ext-1', external: true, externalAgent: 'claude', externalAgentName: 'Claude Code' }));
    const [task] = tree.getChildren();
    assert.ok(task);
    assert.equal(item(task).description, 'Claude Code · 1m 05s');
    assert.match(String(item(task).tooltip), /Claude Code session/);
  });

  it('shows a task with its state icon, description and elapsed time, newest first', () => {
    const { store, item, tree } = setup();
    store.describe(detail({ taskId: 'old', description: 'Old one', state: 'failed', startedAt: START - 7_200_000, updatedAt: START - 3_600_000 }));
    store.describe(detail());
    const [first, second] = tree.getChildren();
    assert.ok(first && second);
    assert.equal(item(first).label, 'Add a --shout flag');
    assert.equal(item(first).description, '1m 05s');
    assert.equal(item(first).iconPath?.id, 'sync~spin');
    assert.equal(item(second).label, 'Old one');
    assert.equal(item(second).description, '1h 00m');
    assert.equal(item(second).iconPath?.id, 'error');
    assert.equal(item(second).collapsibleState, 1, 'a finished task is collapsed');
  });

  it('goes by rawko\'s state class for a state it does not know', () => {
    const task = { taskId: 't', breadcrumb: [], breadcrumbText: '', text: '', workflow: 'feature', state: 'archived' };
    assert.deepEqual(taskActions(viewOf({ ...task, stateClass: 'finished' })), [], 'a finished task offers nothing');
    assert.deepEqual(taskActions(viewOf({ ...task, stateClass: 'busy' })), ['next', 'loop', 'interrupt', 'cancel']);
    assert.equal(taskRow(viewOf({ ...task, stateClass: 'finished' }), 0, false).children, 'collapsed');
  });

  it('offers in the context menu what the task\'s state allows', () => {
    const task = { taskId: 't', breadcrumb: [], breadcrumbText: '', text: '', workflow: 'feature' };
    assert.deepEqual(taskActions(viewOf({ ...task, state: 'running' })), ['next', 'loop', 'interrupt', 'cancel']);
    // rawko takes a retry of an interrupted task too (it rebuilds it from its log and retries).
    assert.deepEqual(taskActions(viewOf({ ...task, state: 'interrupted' })), ['next', 'loop', 'resume', 'retry', 'cancel']);
    assert.deepEqual(taskActions(viewOf({ ...task, state: 'failed' })), ['retry']);
    assert.deepEqual(taskActions(viewOf({ ...task, state: 'complete' })), []);
    assert.deepEqual(taskActions(viewOf({ ...task, workflow: undefined, state: 'blocked' })), ['resume', 'cancel']);
    assert.equal(taskRow(viewOf({ ...task, state: 'running' }), 0, true).contextValue, 'task next loop interrupt cancel');
    // Resume and retry go by rawko's actions, not by the state's name.
    assert.deepEqual(taskActions(viewOf({ ...task, state: 'paused', stateClass: 'waiting', actions: ['resume'] })), ['next', 'loop', 'resume', 'cancel']);
    assert.deepEqual(taskActions(viewOf({ ...task, state: 'failed', actions: [] })), []);
  });

  it('shows a pending approval first under its task, with the reason for people', async () => {
    const { store, approvals, item, labels, tree, changes } = setup();
    store.describe(detail());
    const before = changes();
    const answer = approvals.ask(approval(), never);
    assert.ok(changes() > before, 'the view is redrawn');
    const [task] = tree.getChildren();
    assert.deepEqual(labels(task)[0], 'Write PLAN.md (4 bytes)');
    const row = item(tree.getChildren(task)[0] as TreeNode);
    assert.equal(row.contextValue, 'approval');
    assert.equal(row.description, 'Write is blocked in the Plan phase (allowed: Read, Glob, Grep)');
    assert.equal(row.iconPath?.id, 'shield');
    approvals.answer('task-1', 'call-2', 'reject_once');
    assert.deepEqual(await answer, { outcome: 'reject_once' });
    assert.deepEqual(labels(task)[0], '▶ 📋 Plan');
  });

  it("asks a team task's blocked call that comes before any status of the task, and lists it under the task", async () => {
    // `rawko serve --nats`: a task another machine runs, never started here nor told of yet.
    const clock = new ManualClock();
    const store = new TaskStore(clock);
    const vs = new FakeVs();
    const approvals = new Approvals(vs, clock, { openDiff: () => Promise.resolve() });
    const tree = new TaskTree(fakeTreeVs, clock, store, approvals, () => undefined);
    const item = (node: TreeNode): FakeTreeItem => tree.getTreeItem(node) as unknown as FakeTreeItem;
    const params = approval({
      taskId: 'task-team',
      toolCallId: 'call-9',
      detail: 'Write is blocked in the Plan phase (allowed: Read, Glob, Grep) (team task on ci-runner-1)',
    });
    store.asked(params);
    const answer = approvals.ask(params, never);
    assert.match(String(vs.visiblePick()?.title), /Write PLAN.md \(4 bytes\)/, 'the prompt is shown');
    const [task] = tree.getChildren();
    assert.ok(task);
    assert.equal(item(task).label, 'task-team', 'named by its id until rawko describes it');
    assert.equal(store.get('task-team')?.state, 'waiting_approval');
    assert.equal(store.active()?.taskId, 'task-team', 'the status bar offers the approval');
    const row = item(tree.getChildren(task)[0] as TreeNode);
    assert.equal(row.contextValue, 'approval');
    assert.match(String(row.description), /\(team task on ci-runner-1\)$/);
    // Its first status tells the rest; a call of a known task leaves the task as its statuses say.
    store.status(status({ taskId: 'task-team', workflow: undefined, breadcrumbText: 'Add a flag', text: 'Add a flag · running (on ci-runner-1)' }));
    store.asked(approval({ taskId: 'task-team', toolCallId: 'call-10' }));
    assert.equal(store.get('task-team')?.state, 'running');
    assert.ok(approvals.answer('task-team', 'call-9', 'allow_once'), 'the view answers it');
    assert.deepEqual(await answer, { outcome: 'allow_once' });
  });

  it('asks for a task\'s phases when it shows one it has none of, and the store asks once per workflow', () => {
    const { store, tree, wanted } = setup();
    store.status(status({ taskId: 'ext-1', workflow: undefined }));
    const [task] = tree.getChildren();
    assert.deepEqual(tree.getChildren(task), []);
    assert.deepEqual(wanted, ['ext-1']);
    assert.equal(store.claimDetail('ext-1'), true);
    assert.equal(store.claimDetail('ext-1'), false);
    store.status(status({ taskId: 'ext-1', workflow: 'feature', phaseIndex: 0 }));
    assert.equal(store.claimDetail('ext-1'), true, 'a workflow picked later asks again');
    assert.equal(store.claimDetail('ext-1'), false);
  });

  it('moves the elapsed times on while a task works, and stops when none does', () => {
    const { clock, store, item, tree, changes } = setup();
    store.describe(detail());
    const before = changes();
    clock.advance(10_000);
    assert.ok(changes() >= before + 2);
    assert.equal(item(tree.getChildren()[0] as TreeNode).description, '1m 15s');
    store.status(status({ state: 'complete' }));
    store.finished({ taskId: 'task-1', seq: 99, outcome: 'complete', summary: 'done' });
    assert.equal(clock.pending(), 0);
    assert.equal(item(tree.getChildren()[0] as TreeNode).description, '1m 15s');
    tree.dispose();
  });

  describe('subagents', () => {
    it("shows a subagent under its parent's phase it works in, by its name, its profile and state beside it; its menu acts on its own id", () => {
      const { store, item, labels, tree } = setup();
      store.describe(detail());
      store.status(subStatus('task-2', subagentOf(0, { name: 'security', profile: 'reviewer' })));
      assert.deepEqual(labels(), ['Add a --shout flag'], 'a subagent is no top-level item');
      const [task] = tree.getChildren();
      assert.ok(task);
      assert.deepEqual(labels(task), ['▶ 📋 Plan', '○ 🛠️ Implement', '○ 🧪 Test', '○ Review']);
      const [plan] = tree.getChildren(task);
      assert.ok(plan);
      assert.equal(item(plan).collapsibleState, 2, 'the phase holds its subagents, expanded');
      const [sub] = tree.getChildren(plan);
      assert.ok(sub);
      assert.deepEqual(sub, { kind: 'task', taskId: 'task-2' }, "the row's commands get the subagent's id");
      const row = item(sub);
      assert.equal(row.label, 'security');
      assert.equal(row.description, 'reviewer · running');
      assert.equal(row.iconPath?.id, 'sync~spin');
      assert.equal(row.contextValue, 'task interrupt cancel');
      assert.equal(row.id, 'task/task-2');
      assert.match(String(row.tooltip), /reviewer \(subagent of task-1\)/);
      // The same state icons and words as a task's.
      store.status(subStatus('task-2', subagentOf(0, { name: 'security' }), { state: 'waiting_approval' }));
      assert.equal(item(sub).iconPath?.id, 'shield');
      assert.equal(item(sub).description, 'reviewer · waiting for approval');
      store.status(subStatus('task-2', subagentOf(0, { name: 'security' }), { state: 'complete' }));
      assert.equal(item(sub).iconPath?.id, 'pass');
      assert.equal(item(sub).description, 'reviewer · complete');
      assert.equal(item(sub).contextValue, 'task', 'a finished subagent offers nothing to cancel');
      const phases = tree.getChildren(task).slice(1, 3);
      assert.deepEqual(
        phases.map((p) => item(p).collapsibleState),
        [0, 0],
        'the phases without subagents hold nothing',
      );
    });

    it('a phase shown before it held subagents is a new item once it does, so VS Code shows it expanded', () => {
      const { store, item, tree } = setup();
      store.describe(detail());
      const [task] = tree.getChildren();
      assert.ok(task);
      const before = tree.getChildren(task)[0];
      assert.ok(before);
      assert.equal(item(before).id, 'phase/task-1/feature/0');
      assert.equal(item(before).collapsibleState, 0, 'a leaf');
      store.status(subStatus('task-2', subagentOf(0)));
      const after = tree.getChildren(task)[0];
      assert.ok(after);
      assert.equal(item(after).id, 'phase/task-1/feature/0/subagents', 'another id: VS Code keeps a leaf it showed collapsed');
      assert.equal(item(after).collapsibleState, 2);
      assert.equal(item(tree.getChildren(task)[1] as TreeNode).id, 'phase/task-1/feature/1', 'the others keep theirs');
    });

    it('lists the subagents of a call in their order, under a phase of a nested workflow too', () => {
      const { store, labels, tree } = setup();
      store.describe(detail());
      store.status(subStatus('task-4', subagentOf(1, { name: 'tests', phaseIndex: 3 })));
      store.status(subStatus('task-3', subagentOf(0, { name: 'style', phaseIndex: 3 })));
      store.status(status({ phaseIndex: 3 }));
      const [task] = tree.getChildren();
      assert.ok(task);
      const review = tree.getChildren(task)[3];
      assert.ok(review);
      const [check, fix] = tree.getChildren(review);
      assert.ok(check && fix);
      assert.deepEqual(labels(check), ['style', 'tests']);
      assert.deepEqual(labels(fix), []);
    });

    it("shows a subagent under the task itself without a phase, or while the parent's phases are not known", () => {
      const { store, labels, tree, wanted } = setup();
      store.status(status({}));
      store.status(subStatus('task-2', subagentOf(0)));
      store.status(subStatus('task-3', subagentOf(1, { name: 'writer', profile: 'writer', phaseIndex: undefined })));
      const [task] = tree.getChildren();
      assert.ok(task);
      assert.deepEqual(labels(task), ['reviewer', 'writer'], 'no phase tree yet: under the task');
      assert.ok(wanted.includes('task-1'), "the parent's phases are asked for");
      store.describe(detail());
      assert.deepEqual(labels(task), ['▶ 📋 Plan', '○ 🛠️ Implement', '○ 🧪 Test', '○ Review', 'writer']);
      assert.deepEqual(labels(tree.getChildren(task)[0]), ['reviewer']);
      // A phase index the parent's phases do not have: under the task, never lost.
      store.status(subStatus('task-2', subagentOf(0, { phaseIndex: 42 })));
      assert.deepEqual(labels(task), ['▶ 📋 Plan', '○ 🛠️ Implement', '○ 🧪 Test', '○ Review', 'reviewer', 'writer']);
    });

    it('shows a subagent whose parent is not known yet at the top, by its label, until the parent comes', () => {
      const { store, labels, tree } = setup();
      store.status(subStatus('task-2', subagentOf(0)));
      assert.deepEqual(labels(), ['reviewer (subagent of task-1)']);
      const [orphan] = tree.getChildren();
      assert.deepEqual(orphan, { kind: 'task', taskId: 'task-2' });
      store.describe(detail());
      assert.deepEqual(labels(), ['Add a --shout flag']);
      const [task] = tree.getChildren();
      assert.deepEqual(labels(tree.getChildren(task)[0]), ['reviewer']);
    });

    it("a subagent of a subagent shows under it; parents that name each other stay at the top", () => {
      const { store, labels, tree } = setup();
      store.describe(detail());
      store.status(subStatus('task-2', subagentOf(0, { phaseIndex: undefined })));
      store.status(subStatus('task-3', subagentOf(0, { parentTaskId: 'task-2', name: 'helper', phaseIndex: undefined })));
      const [task] = tree.getChildren();
      const sub = tree.getChildren(task).find((n) => n.kind === 'task');
      assert.ok(sub);
      assert.deepEqual(labels(sub), ['helper']);
      store.status(subStatus('x-1', subagentOf(0, { parentTaskId: 'x-2', label: 'a (subagent of x-2)' })));
      store.status(subStatus('x-2', subagentOf(0, { parentTaskId: 'x-1', label: 'b (subagent of x-1)' })));
      assert.deepEqual(labels().sort(), ['Add a --shout flag', 'a (subagent of x-2)', 'b (subagent of x-1)']);
    });

    it("shows a subagent's pending approval under the subagent, with its label", () => {
      const { store, approvals, labels, item, tree } = setup();
      store.describe(detail());
      store.status(subStatus('task-2', subagentOf(0)));
      void approvals.ask(
        approval({ taskId: 'task-2', subagent: subagentOf(0), detail: 'reviewer (subagent of task-1): Write is blocked in the Plan phase (allowed: Read)' }),
        never,
      );
      const [task] = tree.getChildren();
      assert.deepEqual(labels(task)[0], '▶ 📋 Plan', "the parent's own approvals only");
      const [sub] = tree.getChildren(tree.getChildren(task)[0]);
      assert.ok(sub);
      const [row] = tree.getChildren(sub);
      assert.ok(row);
      assert.equal(item(row).label, 'Write PLAN.md (4 bytes)');
      assert.equal(item(row).description, 'reviewer (subagent of task-1): Write is blocked in the Plan phase (allowed: Read)');
    });
  });

  describe("an external agent's own subagents", () => {
    it('shows them under the session by their type, whose subagent and their state beside it, with no actions', () => {
      const { store, item, labels, tree, clock } = setup();
      store.describe(detail({ taskId: 'ext-1', workflow: undefined, phases: [], external: true, externalAgent: 'claude', externalAgentName: 'Claude Code' }));
      store.output(extSub('ext-1', 'Explore', 'agent-123', 'started'));
      clock.advance(12_000);
      store.output(extSub('ext-1', 'Plan', 'agent-456', 'started'));
      assert.deepEqual(labels(), ['Add a --shout flag'], 'no top-level items of their own');
      const [task] = tree.getChildren();
      assert.ok(task);
      assert.deepEqual(labels(task), ['Explore', 'Plan'], 'in the order they started');
      const [explore, plan] = tree.getChildren(task);
      assert.ok(explore && plan);
      assert.deepEqual(explore, { kind: 'externalSubagent', taskId: 'ext-1', agentId: 'agent-123' });
      let row = item(explore);
      assert.equal(row.description, 'Claude Code subagent · running · 12s');
      assert.equal(row.iconPath?.id, 'sync~spin', "a running subagent's icon, as rawko's");
      assert.equal(row.contextValue, 'externalSubagent', 'no rawko task: nothing the menus offer matches');
      assert.doesNotMatch(row.contextValue, /^(task|phase|approval)\b/);
      assert.equal(row.collapsibleState, 0, 'nothing under it');
      assert.equal(row.id, 'externalSubagent/ext-1/agent-123');
      assert.match(String(row.tooltip), /Explore: Claude Code's own subagent/);
      assert.match(String(row.tooltip), /agent-123/);
      clock.advance(3_000);
      store.output(extSub('ext-1', 'Explore', 'agent-123', 'stopped'));
      row = item(explore);
      assert.equal(row.description, 'Claude Code subagent · complete · 15s');
      assert.equal(row.iconPath?.id, 'pass');
      assert.equal(row.iconPath?.color?.id, 'testing.iconPassed');
      clock.advance(60_000);
      assert.equal(item(explore).description, 'Claude Code subagent · complete · 15s', 'its time stops with it');
      assert.equal(item(plan).description, 'Claude Code subagent · running · 1m 03s');
    });

    it('a task that finishes marks its running subagents stopped', () => {
      const { store, item, tree, clock } = setup();
      store.status(status({ taskId: 'ext-1', workflow: undefined, external: true, externalAgentName: 'Gemini CLI' }));
      store.output(extSub('ext-1', 'Explore', 'agent-1', 'started'));
      store.output(extSub('ext-1', 'Review', 'agent-2', 'started'));
      store.output(extSub('ext-1', 'Review', 'agent-2', 'stopped'));
      clock.advance(5_000);
      store.finished({ taskId: 'ext-1', seq: 99, outcome: 'complete', summary: 'done' });
      assert.deepEqual(
        store.get('ext-1')?.externalSubagents?.map((s) => [s.agent, s.state]),
        [
          ['Explore', 'complete'],
          ['Review', 'complete'],
        ],
      );
      const [task] = tree.getChildren();
      assert.ok(task);
      const [explore] = tree.getChildren(task);
      assert.ok(explore);
      assert.equal(item(explore).description, 'Gemini CLI subagent · complete · 5s');
      assert.equal(item(explore).iconPath?.id, 'pass');
      // So does a finished status.
      store.status(status({ taskId: 'ext-2', workflow: undefined, external: true }));
      store.output(extSub('ext-2', 'Explore', 'agent-3', 'started'));
      store.status(status({ taskId: 'ext-2', workflow: undefined, external: true, state: 'cancelled' }));
      assert.equal(store.get('ext-2')?.externalSubagents?.[0]?.state, 'complete');
    });

    it('a stop first heard of, a start again, other output, an agent named by no one', () => {
      const { store } = setup();
      let changes = 0;
      store.onDidChange(() => (changes += 1));
      store.output(extSub('ext-1', 'Explore', 'agent-9', 'stopped'));
      assert.deepEqual(store.get('ext-1')?.externalSubagents?.map((s) => [s.agentId, s.agent, s.state]), [['agent-9', 'Explore', 'complete']]);
      store.output(extSub('ext-1', 'Explore', 'agent-9', 'started'));
      assert.equal(store.get('ext-1')?.externalSubagents?.[0]?.state, 'running');
      assert.equal(store.get('ext-1')?.externalSubagents?.length, 1, 'one per agentId');
      const before = changes;
      store.output({ taskId: 'ext-1', seq: 50, kind: 'text', text: 'subagent Explore stopped (agent-9)' });
      store.output({ taskId: 'ext-1', seq: 51, kind: 'subagent', text: 'subagent  stopped ()' });
      assert.equal(changes, before, 'nothing else changes the store');
      assert.equal(store.get('ext-1')?.externalSubagents?.[0]?.state, 'running');
      assert.equal(subagentStopped('subagent Stopped Helper started (a-1)'), false, 'the last words tell');
      assert.equal(subagentStopped('subagent My started thing stopped (a-1)'), true);
    });

    it('names no agent when the session does not, and the rawko subagents come first', () => {
      const { store, labels, tree } = setup();
      store.status(status({ workflow: undefined, external: true }));
      store.output(extSub('task-1', 'Explore', 'agent-1', 'started'));
      store.status(subStatus('task-2', subagentOf(0, { phaseIndex: undefined })));
      const [task] = tree.getChildren();
      assert.ok(task);
      assert.deepEqual(labels(task), ['reviewer', 'Explore']);
      const view = store.get('task-1');
      const sub = view?.externalSubagents?.[0];
      assert.ok(view && sub);
      assert.equal(externalSubagentRow(view, sub, sub.startedAt).description, 'External agent subagent · running · 0s');
    });
  });

  it('phaseRows without phases, and formatElapsed', () => {
    assert.deepEqual(phaseRows(viewOf({ taskId: 't', state: 'running', breadcrumb: [], breadcrumbText: '', text: '' })), []);
    assert.equal(formatElapsed(999), '0s');
    assert.equal(formatElapsed(59_999), '59s');
    assert.equal(formatElapsed(61_000), '1m 01s');
    assert.equal(formatElapsed(3_725_000), '1h 02m');
  });
});
