/**
 * The phase tree's checkpoint commands: a `rawko/phaseDiff` result turned into each file's two
 * sides (git's own diff text, quoted paths, hunks, added and deleted files), the phase rows that
 * offer the commands, and Show Changes and Rewind to This Phase against a fake server: the modal
 * question lists the dry run's changes, a rewind stopped by the user's changes names them and
 * offers Rewind Anyway, and nothing is sent that the user did not confirm.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RequestParam, RequestType } from 'vscode-jsonrpc';
import { Checkpoints, conflictQuestion, fileSides, parseDiff, rewindQuestion, type FileSides } from '../../src/checkpoints';
import type { Rpc } from '../../src/commands';
import type { PhaseDiffResult, PhaseNode, RewindTaskResult, TaskDetail } from '../../src/protocol';
import { TaskStore } from '../../src/tasks';
import { phaseRows } from '../../src/tree';
import { FakeVs, ManualClock } from './fake-vscode';
import { look } from './fixtures';

/** `git diff --no-color` of a modified file (two hunks), a quoted non-ASCII name, an added and a deleted file. */
const DIFF = `diff --git a/a.txt b/a.txt
index 0ff3bbb..9bebd18 100644
--- a/a.txt
+++ b/a.txt
@@ -1,5 +1,5 @@
 1
-2
+two
 3
 4
 5
@@ -15,6 +15,6 @@ fn context()
 15
 16
 17
-18
+eighteen
 19
 20
diff --git "a/caf\\303\\251.txt" "b/caf\\303\\251.txt"
index 587be6b..975fbec 100644
--- "a/caf\\303\\251.txt"
+++ "b/caf\\303\\251.txt"
@@ -1 +1 @@
-x
+y
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..07f33c4
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+new
+file
diff --git a/old.txt b/old.txt
deleted file mode 100644
index 286c5f5..0000000
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-gone
`;

const RESULT: PhaseDiffResult = {
  diff: DIFF,
  files: [
    { path: 'a.txt', status: 'modified' },
    { path: 'café.txt', status: 'modified' },
    { path: 'new.txt', status: 'added' },
    { path: 'old.txt', status: 'deleted' },
  ],
  from: '1'.repeat(40),
  to: '2'.repeat(40),
};

describe('a phase diff as the diff editor shows it', () => {
  it('splits git diff text into its files, quoted names unquoted', () => {
    const sections = parseDiff(DIFF);
    assert.deepEqual(
      sections.map((s) => [s.path, s.status, s.hunks.length]),
      [
        ['a.txt', 'modified', 2],
        ['café.txt', 'modified', 1],
        ['new.txt', 'added', 1],
        ['old.txt', 'deleted', 1],
      ],
    );
  });

  it("gives a modified file's hunks under their place, an added or deleted file whole", () => {
    const sides = new Map(fileSides(RESULT).map((f) => [f.path, f]));
    assert.deepEqual(sides.get('a.txt'), {
      path: 'a.txt',
      status: 'modified',
      before: '@@ -1,5 +1,5 @@\n1\n2\n3\n4\n5\n@@ -15,6 +15,6 @@\n15\n16\n17\n18\n19\n20\n',
      after: '@@ -1,5 +1,5 @@\n1\ntwo\n3\n4\n5\n@@ -15,6 +15,6 @@\n15\n16\n17\neighteen\n19\n20\n',
    });
    assert.deepEqual(sides.get('café.txt'), { path: 'café.txt', status: 'modified', before: '@@ -1 +1 @@\nx\n', after: '@@ -1 +1 @@\ny\n' });
    assert.deepEqual(sides.get('new.txt'), { path: 'new.txt', status: 'added', before: '', after: 'new\nfile\n' });
    assert.deepEqual(sides.get('old.txt'), { path: 'old.txt', status: 'deleted', before: 'gone\n', after: '' });
    assert.deepEqual([...sides.keys()], ['a.txt', 'café.txt', 'new.txt', 'old.txt'], 'in the order of the files');
  });

  it('says a binary file has no text, and keeps a file the text does not show', () => {
    const binary = 'diff --git a/logo.png b/logo.png\nindex 1..2 100644\nBinary files a/logo.png and b/logo.png differ\n';
    const sides = fileSides({
      diff: binary,
      files: [
        { path: 'logo.png', status: 'modified' },
        { path: 'run.sh', status: 'modified' },
      ],
      from: null,
      to: null,
    });
    assert.match(sides[0]?.after ?? '', /binary file/);
    assert.deepEqual(sides[1], { path: 'run.sh', status: 'modified', before: '', after: '' });
  });
});

describe('the questions of a rewind', () => {
  const dry: RewindTaskResult = {
    rewound: false,
    phase: 'Implement',
    changes: [
      { path: 'shout.txt', action: 'restore' },
      { path: 'notes.md', action: 'remove' },
    ],
    conflicts: [],
    text: '',
  };

  it('lists what the dry run would change', () => {
    const q = rewindQuestion('Add a --shout flag', 'Implement', dry);
    assert.equal(q.message, 'Rewind "Add a --shout flag" to the start of Implement?');
    assert.match(q.detail, /^These files go back to how they were when the task entered Implement:\nrestore shout\.txt\nremove notes\.md\n/);
    assert.match(q.detail, /can be resumed/);
    assert.doesNotMatch(q.detail, /You changed/);
    assert.equal(q.confirm, 'Rewind');
  });

  it('says when no file changes, names the user changes, and cuts a long list', () => {
    const many = Array.from({ length: 20 }, (_, i) => ({ path: `f${i}.txt`, action: 'restore' }));
    const q = rewindQuestion('t', 'Plan', { ...dry, changes: many, conflicts: ['f3.txt'] });
    assert.match(q.detail, /restore f14\.txt\n… and 5 more/);
    assert.doesNotMatch(q.detail, /f15\.txt/);
    assert.match(q.detail, /You changed these files[^\n]*\nf3\.txt/);
    assert.match(rewindQuestion('t', 'Plan', { ...dry, changes: [] }).detail, /^No file changes/);
  });

  it('names the files the user changed and offers Rewind Anyway', () => {
    const q = conflictQuestion('Implement', { ...dry, conflicts: ['shout.txt'] });
    assert.equal(q.message, 'rawko did not rewind to Implement: you changed a file it would overwrite');
    assert.match(q.detail, /\nshout\.txt\n/);
    assert.equal(q.confirm, 'Rewind Anyway');
  });
});

const PHASES: PhaseNode[] = [
  { kind: 'phase', index: 0, id: 'plan', name: 'Plan', depth: 0, status: 'done', breadcrumbText: 'Feature > Plan [1/2]', hasCheckpoint: true },
  { kind: 'phase', index: 1, id: 'implement', name: 'Implement', depth: 0, status: 'current', breadcrumbText: 'Feature > Implement [2/2]', hasCheckpoint: true },
  { kind: 'phase', index: 2, id: 'test', name: 'Test', depth: 0, status: 'todo', breadcrumbText: 'Feature > Test [3/3]', hasCheckpoint: false },
];

function detail(phases: PhaseNode[] = PHASES): TaskDetail {
  return {
    taskId: 'task-1',
    description: 'Add a --shout flag',
    workflow: 'feature',
    state: 'complete',
    breadcrumbText: 'Feature > Implement [2/2]',
    startedAt: 1,
    breadcrumb: [],
    history: [],
    phases,
    ...look('complete', 'Feature > Implement [2/2]', 'task-1'),
  };
}

describe('the phase rows that offer Show Changes and Rewind', () => {
  it('are the phases rawko took a checkpoint at', () => {
    const store = new TaskStore(new ManualClock());
    store.describe(detail());
    const task = store.get('task-1');
    assert.ok(task);
    assert.deepEqual(
      phaseRows(task).map((r) => r.contextValue),
      ['phase checkpoint', 'phase checkpoint', 'phase'],
    );
  });

  it('are none from a rawko without checkpoints', () => {
    const store = new TaskStore(new ManualClock());
    store.describe(detail(PHASES.map((p) => ({ ...p, hasCheckpoint: undefined }))));
    const task = store.get('task-1');
    assert.ok(task);
    assert.deepEqual(
      phaseRows(task).map((r) => r.contextValue),
      ['phase', 'phase', 'phase'],
    );
  });
});

describe('a rewound task in the store', () => {
  it("takes its state from rawko's answer after a rewind, a finished task's too", () => {
    const store = new TaskStore(new ManualClock());
    store.describe(detail());
    const back: TaskDetail = { ...detail(), state: 'interrupted', ...look('interrupted', 'Feature > Implement [2/2]', 'task-1') };
    store.describe(back);
    assert.equal(store.get('task-1')?.state, 'complete', 'the statuses own the state of a known task');
    store.describe(back, true);
    const task = store.get('task-1');
    assert.equal(task?.state, 'interrupted');
    assert.equal(task?.stateClass, 'waiting');
    assert.equal(task?.outcome, undefined);
    assert.ok(task?.actions?.includes('resume'), 'it can be resumed');
  });
});

class FakeServer implements Rpc {
  readonly requests: { method: string; params: unknown }[] = [];
  /** The answers of `rawko/rewindTask`, in order. */
  rewinds: RewindTaskResult[] = [];
  request<P, R>(type: RequestType<P, R, void>, params: RequestParam<P>): Promise<R> {
    this.requests.push({ method: type.method, params });
    if (type.method === 'rawko/phaseDiff') {
      return Promise.resolve(RESULT as R);
    }
    const next = this.rewinds.shift();
    return next ? Promise.resolve(next as R) : Promise.reject(new Error('no answer scripted'));
  }
}

function setup() {
  const vs = new FakeVs();
  const store = new TaskStore(new ManualClock());
  store.describe(detail());
  const server = new FakeServer();
  const opened: { title: string; files: FileSides[] }[] = [];
  const notes: string[] = [];
  const refreshed: string[] = [];
  const resumed: string[] = [];
  const checkpoints = new Checkpoints(vs, store, {
    rpc: () => server,
    openSides: (title, files) => {
      opened.push({ title, files });
      return Promise.resolve(true);
    },
    openText: () => Promise.resolve(),
    note: (_, text) => notes.push(text),
    refresh: (id) => {
      refreshed.push(id);
      return Promise.resolve();
    },
    resume: (id) => {
      resumed.push(id);
      return Promise.resolve();
    },
  });
  return { vs, server, checkpoints, opened, notes, refreshed, resumed };
}

const IMPLEMENT = { kind: 'phase', taskId: 'task-1', at: 1 };

function rewindResult(extra: Partial<RewindTaskResult>): RewindTaskResult {
  return { rewound: false, phase: 'Implement', changes: [{ path: 'shout.txt', action: 'remove' }], conflicts: [], text: '', ...extra };
}

describe('Show Changes and Rewind to This Phase', () => {
  it('Show Changes asks for the phase by its index and opens every file', async () => {
    const { server, checkpoints, opened } = setup();
    await checkpoints.showChanges(IMPLEMENT);
    assert.deepEqual(server.requests, [{ method: 'rawko/phaseDiff', params: { taskId: 'task-1', index: 1 } }]);
    assert.equal(opened[0]?.title, 'Implement: what the phase changed (Add a --shout flag)');
    assert.deepEqual(
      opened[0]?.files.map((f) => f.path),
      ['a.txt', 'café.txt', 'new.txt', 'old.txt'],
    );
  });

  it('asks with the dry run’s changes, then rewinds; dismissed, it sends nothing more', async () => {
    const { vs, server, checkpoints, notes, refreshed, resumed } = setup();
    server.rewinds = [rewindResult({}), rewindResult({ rewound: true, text: 'rewound to Implement: removed shout.txt' })];
    vs.script.messages.push('Rewind', 'Resume Task');
    await checkpoints.rewind(IMPLEMENT);
    assert.deepEqual(
      server.requests.map((r) => r.params),
      [
        { taskId: 'task-1', index: 1, dryRun: true },
        { taskId: 'task-1', index: 1 },
      ],
    );
    const ask = vs.messages[0];
    assert.equal(ask?.severity, 'warning');
    assert.equal(ask?.options?.modal, true);
    assert.match(ask?.options?.detail ?? '', /remove shout\.txt/);
    assert.deepEqual(ask?.items, ['Rewind']);
    assert.deepEqual(notes, ['rewound to Implement: removed shout.txt']);
    assert.deepEqual(refreshed, ['task-1']);
    assert.deepEqual(resumed, ['task-1'], 'Resume Task resumes it');

    const second = setup();
    second.server.rewinds = [rewindResult({})];
    second.vs.script.messages.push(undefined);
    await second.checkpoints.rewind(IMPLEMENT);
    assert.deepEqual(second.server.requests.length, 1, 'only the dry run');
  });

  it('a rewind stopped by the user’s changes names them; Rewind Anyway forces it', async () => {
    const { vs, server, checkpoints, refreshed } = setup();
    server.rewinds = [rewindResult({}), rewindResult({ conflicts: ['shout.txt'] }), rewindResult({ rewound: true, text: 'rewound' })];
    vs.script.messages.push('Rewind', 'Rewind Anyway', undefined);
    await checkpoints.rewind(IMPLEMENT);
    assert.deepEqual(server.requests.at(-1)?.params, { taskId: 'task-1', index: 1, force: true });
    const again = vs.messages[1];
    assert.equal(again?.message, 'rawko did not rewind to Implement: you changed a file it would overwrite');
    assert.match(again?.options?.detail ?? '', /shout\.txt/);
    assert.equal(again?.options?.modal, true);
    assert.deepEqual(refreshed, ['task-1']);

    const keep = setup();
    keep.server.rewinds = [rewindResult({}), rewindResult({ conflicts: ['shout.txt'] })];
    keep.vs.script.messages.push('Rewind', undefined);
    await keep.checkpoints.rewind(IMPLEMENT);
    assert.equal(keep.server.requests.length, 2, 'no forced rewind without Rewind Anyway');
    assert.deepEqual(keep.refreshed, []);
  });

  it('says why when rawko refuses', async () => {
    const { vs, checkpoints } = setup();
    await checkpoints.rewind(IMPLEMENT);
    assert.equal(vs.messages[0]?.severity, 'error');
    assert.match(vs.messages[0]?.message ?? '', /^rawko: could not rewind to Implement: no answer scripted$/);
  });
});
