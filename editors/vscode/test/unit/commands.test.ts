/**
 * The palette commands against a fake server: Start Task (description, workflow pick with names
 * and their phase and step counts, no workflow, provider settings), and the commands that need a task (the
 * given one, the active one, the only one, or the one the user picks).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Approvals } from '../../src/approval';
import { Commands, type Rpc, type StartSettings } from '../../src/commands';
import type { RequestParam, RequestType } from 'vscode-jsonrpc';
import type { StatusParams, TaskSummary, WorkflowSummary } from '../../src/protocol';
import { TaskStore } from '../../src/tasks';
import { FakeVs, ManualClock } from './fake-vscode';
import { actionsOf, statusOf, summaryOf } from './fixtures';

const WORKFLOWS: WorkflowSummary[] = [
  { key: 'feature', name: 'Feature', commandName: 'feature', phaseCount: 5, outerPhaseCount: 4, show: 'user', source: '/p/.rawko/workflows/feature' },
  { key: 'review', name: 'Review', commandName: '', phaseCount: 2, outerPhaseCount: 2, show: 'workflows', source: '/p/.rawko/workflows/review' },
  { key: 'docs', name: 'Docs', commandName: 'docs', phaseCount: 1, outerPhaseCount: 1, show: 'user', source: '/home/.config/rawko/workflows/docs' },
];

function summary(taskId: string, state: string): TaskSummary {
  return summaryOf({ taskId, description: `task ${taskId}`, workflow: 'feature', state, breadcrumbText: 'Feature > 📋 Plan [1/4]', startedAt: 1 });
}

class FakeServer implements Rpc {
  readonly requests: { method: string; params: unknown }[] = [];
  tasks: TaskSummary[] = [];
  fail: Record<string, { code: number; message: string }> = {};
  request<P, R>(type: RequestType<P, R, void>, params: RequestParam<P>): Promise<R> {
    const method = type.method;
    this.requests.push({ method, params });
    const error = this.fail[method];
    if (error) {
      return Promise.reject(Object.assign(new Error(error.message), { code: error.code }));
    }
    const results: Record<string, unknown> = {
      'rawko/listWorkflows': { workflows: WORKFLOWS },
      'rawko/startTask': { taskId: 'task-new' },
      'rawko/listTasks': { tasks: this.tasks },
      'rawko/step': { text: '✓ Advanced: Plan → 🛠️ Implement\nmore' },
      'rawko/setWorkflow': { text: 'Started the Feature workflow.' },
    };
    return Promise.resolve((results[method] ?? {}) as R);
  }
  methods(): string[] {
    return this.requests.map((r) => r.method);
  }
}

function setup(settings: StartSettings = { provider: '', model: '', script: '' }) {
  const vs = new FakeVs();
  const clock = new ManualClock();
  const store = new TaskStore(clock);
  const server = new FakeServer();
  let up = true;
  const notes: string[] = [];
  let shown = 0;
  const approvals = new Approvals(vs, clock, { openDiff: () => Promise.resolve() });
  const commands = new Commands(vs, store, approvals, {
    rpc: () => (up ? server : undefined),
    settings: () => settings,
    showOutput: () => (shown += 1),
    note: (_id, text) => notes.push(text),
  });
  return { vs, store, server, commands, notes, shown: () => shown, down: () => (up = false) };
}

describe('Rawko: Start Task', () => {
  it('asks for a description, offers the workflows with phase counts and "no workflow", and starts the task', async () => {
    const { vs, store, server, commands, shown } = setup({ provider: 'scripted', model: '', script: 'scripts/e2e.yaml' });
    vs.script.inputs.push('  Add a --shout flag  ');
    vs.script.picks.push('Feature');
    assert.equal(await commands.start(), 'task-new');
    const offered = vs.shownPicks[0]?.items.map((i) => [i.label, i.description]);
    assert.deepEqual(offered, [
      ['Feature', '4 phases, 5 steps · feature'],
      ['Docs', '1 phase · docs'],
      ['$(circle-slash) No workflow', 'the agent works without phases'],
    ]);
    const start = server.requests.find((r) => r.method === 'rawko/startTask');
    assert.deepEqual(start?.params, { description: 'Add a --shout flag', workflow: 'feature', provider: 'scripted', script: 'scripts/e2e.yaml' });
    assert.equal(store.active()?.taskId, 'task-new');
    assert.equal(store.active()?.description, 'Add a --shout flag');
    assert.equal(shown(), 1, 'the output is shown');
  });

  it('starts a task without a workflow', async () => {
    const { vs, server, commands } = setup();
    vs.script.inputs.push('Explain the build');
    vs.script.picks.push('No workflow');
    await commands.start();
    assert.deepEqual(server.requests.at(-1)?.params, { description: 'Explain the build' });
  });

  it('refuses an empty description and does nothing when cancelled', async () => {
    const { vs, server, commands } = setup();
    const validate = async (): Promise<unknown> => {
      vs.script.inputs.push(undefined);
      await commands.start();
      return vs.inputBoxes[0]?.validateInput?.('   ');
    };
    assert.ok(await validate(), 'a blank description is refused');
    vs.script.inputs.push('x');
    vs.script.picks.push(undefined);
    await commands.start();
    assert.ok(!server.methods().includes('rawko/startTask'));
  });

  it('still offers "no workflow" when the workflows cannot be listed', async () => {
    const { vs, server, commands } = setup();
    server.fail['rawko/listWorkflows'] = { code: -32603, message: 'internal error' };
    vs.script.inputs.push('x');
    vs.script.picks.push('No workflow');
    assert.equal(await commands.start(), 'task-new');
    assert.match(vs.messages[0]?.message ?? '', /could not list the workflows: internal error/);
  });

  it('says the server is down instead of failing', async () => {
    const { vs, commands, down } = setup();
    down();
    assert.equal(await commands.start(), undefined);
    assert.match(vs.messages[0]?.message ?? '', /server is not running/);
  });
});

describe('commands that need a task', () => {
  it('act on the task they are given (the status bar passes its own)', async () => {
    const { server, commands } = setup();
    await commands.interrupt('task-7');
    assert.deepEqual(server.requests, [{ method: 'rawko/interrupt', params: { taskId: 'task-7' } }]);
  });

  it('act on the active task', async () => {
    const { store, server, commands, notes } = setup();
    store.started('task-1', 'Add a flag', 'feature');
    await commands.step('next');
    assert.deepEqual(server.requests, [{ method: 'rawko/step', params: { taskId: 'task-1', action: 'next' } }]);
    assert.equal(notes[0], '✓ Advanced: Plan → 🛠️ Implement\nmore');
    await commands.step('loop');
    await commands.cancel();
    assert.deepEqual(server.methods(), ['rawko/step', 'rawko/step', 'rawko/cancelTask']);
  });

  it('take the only fitting task when the active one is finished', async () => {
    const { store, server, commands } = setup();
    store.status(statusOf({ taskId: 'done', seq: 1, state: 'complete', breadcrumb: [], text: 'x — complete', breadcrumbText: 'x' }));
    server.tasks = [summary('done', 'complete'), summary('live', 'running')];
    await commands.cancel();
    assert.deepEqual(server.requests.at(-1), { method: 'rawko/cancelTask', params: { taskId: 'live' } });
  });

  it('ask when several tasks fit', async () => {
    const { vs, server, commands } = setup();
    server.tasks = [summary('a', 'running'), summary('b', 'countdown')];
    vs.script.picks.push('task b');
    await commands.interrupt();
    assert.equal(vs.shownPicks[0]?.items.length, 2);
    assert.deepEqual(server.requests.at(-1), { method: 'rawko/interrupt', params: { taskId: 'b' } });
  });

  it('say so when no task fits', async () => {
    const { vs, server, commands } = setup();
    server.tasks = [summary('a', 'complete')];
    await commands.cancel();
    assert.match(vs.messages[0]?.message ?? '', /no task to cancel/);
    assert.deepEqual(server.methods(), ['rawko/listTasks']);
  });

  it('show rawko\'s error when the task cannot do it now', async () => {
    const { vs, store, server, commands } = setup();
    store.started('task-1', 'x', 'feature');
    server.fail['rawko/interrupt'] = { code: -32003, message: 'the task is not counting down' };
    await commands.interrupt();
    assert.equal(vs.messages[0]?.message, 'rawko: cannot interrupt now: the task is not counting down');
  });
});

describe('Rawko: Show Tasks', () => {
  it('resumes an interrupted task', async () => {
    const { vs, store, server, commands } = setup();
    server.tasks = [summary('old', 'interrupted'), summary('done', 'complete')];
    vs.script.picks.push('task old', 'Resume');
    await commands.showTasks();
    assert.deepEqual(server.requests.at(-1), { method: 'rawko/resumeTask', params: { taskId: 'old' } });
    assert.equal(store.active()?.taskId, 'old');
    const labels = vs.shownPicks[0]?.items.map((i) => i.label);
    assert.deepEqual(labels, ['$(debug-disconnect) task old', '$(check) task done']);
  });

  it('retries a failed task', async () => {
    const { vs, server, commands } = setup();
    server.tasks = [summary('bad', 'failed')];
    vs.script.picks.push('task bad', 'Retry');
    await commands.showTasks();
    assert.deepEqual(server.requests.at(-1), { method: 'rawko/retry', params: { taskId: 'bad' } });
  });

  it('follows a finished task without asking what to do', async () => {
    const { vs, store, server, commands, shown } = setup();
    server.tasks = [summary('done', 'complete')];
    vs.script.picks.push('task done');
    await commands.showTasks();
    assert.equal(vs.shownPicks.length, 1, 'one action: no second question');
    assert.equal(store.active()?.taskId, 'done');
    assert.equal(shown(), 1);
  });
});

describe('Rawko: Pick Workflow', () => {
  // A task without a workflow: rawko's breadcrumb text is its description.
  const bare = (taskId: string, state = 'running'): TaskSummary =>
    summaryOf({ ...summary(taskId, state), workflow: undefined, breadcrumbText: `task ${taskId}`, breadcrumbLevels: undefined, actions: actionsOf(state, true, false) });

  it('picks among the running tasks without a workflow, then sends rawko/setWorkflow with the picked key', async () => {
    const { vs, server, commands, notes } = setup();
    server.tasks = [summary('busy', 'running'), bare('ext-1'), bare('ext-2'), bare('ext-3', 'complete')];
    vs.script.picks.push('task ext-2', 'Feature');
    await commands.pickWorkflow();
    assert.deepEqual(vs.shownPicks[0]?.items.map((i) => i.label), ['$(sync~spin) task ext-1', '$(sync~spin) task ext-2']);
    assert.deepEqual(vs.shownPicks[1]?.items.map((i) => i.label), ['Feature', 'Docs'], 'no "No workflow" item');
    assert.deepEqual(server.requests.at(-1), { method: 'rawko/setWorkflow', params: { taskId: 'ext-2', workflow: 'feature' } });
    assert.deepEqual(notes, ['Started the Feature workflow.']);
    assert.deepEqual(vs.messages.at(-1), { severity: 'information', message: 'rawko: Started the Feature workflow.', options: undefined, items: [] });
  });

  it('takes the active task when it runs no workflow, and shows rawko\'s error', async () => {
    const { vs, store, server, commands } = setup();
    store.status(statusOf({ taskId: 'ext-9', seq: 1, state: 'running', breadcrumb: [], text: 'hi', breadcrumbText: 'hi' }));
    server.fail['rawko/setWorkflow'] = { code: -32004, message: 'no workflow "docs"' };
    vs.script.picks.push('Docs');
    await commands.pickWorkflow();
    assert.deepEqual(server.methods(), ['rawko/listWorkflows', 'rawko/setWorkflow']);
    assert.deepEqual(server.requests.at(-1)?.params, { taskId: 'ext-9', workflow: 'docs' });
    assert.equal(vs.messages.at(-1)?.severity, 'error');
    assert.match(vs.messages.at(-1)?.message ?? '', /no workflow "docs"/);
  });

  it('sends nothing when the pick is dismissed', async () => {
    const { vs, server, commands } = setup();
    vs.script.picks.push(undefined);
    await commands.pickWorkflow('ext-1');
    assert.deepEqual(server.methods(), ['rawko/listWorkflows']);
  });
});

describe('the "runs no workflow yet" notice', () => {
  // As rawko sends it: without a workflow the status line is the session's first prompt.
  const status = (taskId: string, workflow?: string, state = 'running'): StatusParams => statusOf({
    taskId,
    seq: 1,
    state,
    breadcrumb: workflow ? [{ name: 'Feature', phaseName: 'Plan', emoji: '📋', index: 1, total: 4 }] : [],
    text: workflow ? 'Feature > 📋 Plan [1/4]' : 'fix the build',
    breadcrumbText: workflow ? 'Feature > 📋 Plan [1/4]' : 'fix the build',
    workflow,
  });

  it('is shown once per external session, and its button runs Rawko: Pick Workflow', async () => {
    const { vs, commands } = setup();
    vs.script.messages.push('Pick Workflow');
    await commands.statusArrived(status('ext-1'));
    await commands.statusArrived(status('ext-1'));
    assert.deepEqual(vs.messages, [
      { severity: 'information', message: 'rawko: external session ext-1 runs no workflow yet', options: undefined, items: ['Pick Workflow'] },
    ]);
    assert.deepEqual(vs.executed, [{ command: 'rawko.pickWorkflow', args: ['ext-1'] }]);
  });

  it('goes by rawko\'s external field, not by the task id', async () => {
    const { vs, commands } = setup();
    vs.script.messages.push(undefined);
    await commands.statusArrived({ ...status('ext-5'), external: false });
    assert.equal(vs.messages.length, 0, 'an id that looks external is not enough');
    await commands.statusArrived({ ...status('session-7'), external: true });
    assert.equal(vs.messages[0]?.message, 'rawko: external session session-7 runs no workflow yet');
  });

  it('is not shown for other tasks, tasks with a workflow or tasks not running', async () => {
    const { vs, commands } = setup();
    await commands.statusArrived(status('task-1'));
    await commands.statusArrived(status('ext-2', 'feature'));
    await commands.statusArrived(status('ext-3', undefined, 'waiting_approval'));
    assert.deepEqual(vs.messages, []);
    vs.script.messages.push(undefined);
    await commands.statusArrived(status('ext-3'));
    assert.equal(vs.messages.length, 1);
    assert.deepEqual(vs.executed, [], 'dismissed: nothing runs');
  });
});
