/**
 * The phase tree's checkpoint commands: "Show Changes" (`rawko/phaseDiff`) and "Rewind to This
 * Phase" (`rawko/rewindTask`).
 *
 * Show Changes opens VS Code's diff editor rather than the unified text: each changed file gets a
 * read-only left and right side built from git's hunks (`fileSides`), so the changes read as
 * they do in the Source Control view, word-level highlights included; one file opens in the
 * ordinary diff editor, several in the multi-file diff editor (`vscode.changes`), which lists
 * every file of the phase in one scrolling editor. The protocol carries the diff, not the files,
 * so a modified file's sides hold its hunks only, each under its `@@ … @@` line (the same on both
 * sides, so it reads as a heading and tells where the hunk is); an added or deleted file's side is
 * the whole file. Where the diff editor cannot open (an older VS Code), the unified text opens as
 * one read-only `diff` document.
 *
 * Rewind asks first with a modal warning that lists what a dry run says would change; after it,
 * a rewind stopped by the user's own changes names those files and offers "Rewind Anyway"
 * (`force`). The pure part (`parseDiff`, `fileSides`, `rewindQuestion`, `conflictQuestion`) is
 * unit-tested; `Checkpoints` drives it through the `Vs` subset and a host that opens documents.
 */
import type { Rpc } from './commands';
import { errorOf } from './commands';
import { Requests, type PhaseDiffResult, type PhaseNode, type RewindTaskResult } from './protocol';
import type { TaskStore, TaskView } from './tasks';
import type { Vs } from './vs';

/** One file of a unified diff: its path and its lines after the `---`/`+++` header. */
export interface DiffSection {
  path: string;
  /** Added (`--- /dev/null`), deleted (`+++ /dev/null`) or modified. */
  status: 'added' | 'modified' | 'deleted';
  binary: boolean;
  /** The hunks: each `@@` line and the lines under it. */
  hunks: { header: string; lines: string[] }[];
}

/** A changed file as the diff editor shows it: the text of each side. */
export interface FileSides {
  path: string;
  status: string;
  before: string;
  after: string;
}

/** Undoes git's C-style quoting of a path with special characters (`"a/caf\303\251.txt"`). */
export function unquotePath(text: string): string {
  if (!text.startsWith('"') || !text.endsWith('"') || text.length < 2) {
    return text;
  }
  const bytes: number[] = [];
  const inner = text.slice(1, -1);
  const simple: Record<string, number> = { n: 10, t: 9, r: 13, b: 8, f: 12, a: 7, v: 11, '"': 34, '\\': 92 };
  for (let i = 0; i < inner.length; i += 1) {
    const c = inner[i] ?? '';
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const next = inner[i + 1] ?? '';
    if (/[0-7]/.test(next)) {
      bytes.push(parseInt(inner.slice(i + 1, i + 4), 8));
      i += 3;
    } else {
      bytes.push(simple[next] ?? next.charCodeAt(0));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** The path of a `--- a/x` / `+++ b/x` line, without its `a/`/`b/`; undefined for `/dev/null`. */
function headerPath(rest: string): string | undefined {
  const name = unquotePath(rest.replace(/\t.*$/, '').trim());
  return name === '/dev/null' ? undefined : name.replace(/^[ab]\//, '');
}

/** The path a `diff --git a/x b/x` line names (the two are the same: rawko's diffs find no renames). */
function gitLinePath(line: string): string {
  const rest = line.slice('diff --git '.length);
  if (rest.startsWith('"')) {
    const end = rest.indexOf('" ', 1);
    return unquotePath(end > 0 ? rest.slice(0, end + 1) : rest).replace(/^a\//, '');
  }
  // Unquoted: `a/P b/P` with the same P twice.
  const half = (rest.length - 1) / 2;
  return rest.slice(0, half).replace(/^a\//, '');
}

/** Splits git's unified diff into its files. */
export function parseDiff(diff: string): DiffSection[] {
  const sections: DiffSection[] = [];
  let section: DiffSection | undefined;
  let inHeader = false;
  for (const line of diff.split('\n')) {
    if (line.startsWith('diff --git ')) {
      section = { path: gitLinePath(line), status: 'modified', binary: false, hunks: [] };
      sections.push(section);
      inHeader = true;
      continue;
    }
    if (!section) {
      continue;
    }
    if (inHeader) {
      if (line.startsWith('new file mode')) {
        section.status = 'added';
      } else if (line.startsWith('deleted file mode')) {
        section.status = 'deleted';
      } else if (line.startsWith('Binary files ') || line === 'GIT binary patch') {
        section.binary = true;
      } else if (line.startsWith('--- ')) {
        const from = headerPath(line.slice(4));
        section.path = from ?? section.path;
      } else if (line.startsWith('+++ ')) {
        const to = headerPath(line.slice(4));
        section.path = to ?? section.path;
      }
    }
    if (line.startsWith('@@')) {
      inHeader = false;
      section.hunks.push({ header: line, lines: [] });
    } else if (!inHeader) {
      section.hunks.at(-1)?.lines.push(line);
    }
  }
  return sections;
}

/** One side of a section: `' '` lines and those of `mark` (`-` before, `+` after). */
function side(section: DiffSection, mark: '-' | '+'): string {
  if (section.binary) {
    return '(a binary file: rawko shows no text for it)\n';
  }
  const whole = section.status !== 'modified';
  const out: string[] = [];
  for (const hunk of section.hunks) {
    if (!whole) {
      // The hunk's place, the same text on both sides: it reads as a heading, not a change.
      out.push(hunk.header.replace(/^(@@ [^@]* @@).*$/, '$1'));
    }
    // The last empty string is the diff's final newline, not a line of the file.
    const lines = hunk.lines.at(-1) === '' ? hunk.lines.slice(0, -1) : hunk.lines;
    for (const line of lines) {
      if (line.startsWith(' ') || line.startsWith(mark)) {
        out.push(line.slice(1));
      } else if (line === '') {
        out.push(''); // an empty context line whose space an editor trimmed
      }
    }
  }
  if (section.status === (mark === '-' ? 'added' : 'deleted')) {
    return '';
  }
  return out.length === 0 ? '' : `${out.join('\n')}\n`;
}

/**
 * The files of a `rawko/phaseDiff` result, each with the text of its two sides, in the order of
 * `files` (a file the diff has no section for, e.g. one whose mode alone changed, has empty sides).
 */
export function fileSides(result: PhaseDiffResult): FileSides[] {
  const sections = new Map(parseDiff(result.diff).map((s) => [s.path, s]));
  const files = result.files.length > 0 ? result.files : [...sections.values()].map((s) => ({ path: s.path, status: s.status }));
  return files.map((file) => {
    const section = sections.get(file.path);
    if (!section) {
      return { path: file.path, status: file.status, before: '', after: '' };
    }
    // The result's word for how it changed wins over what the text suggests.
    const words: string[] = ['added', 'modified', 'deleted'];
    const status = words.includes(file.status) ? (file.status as DiffSection['status']) : section.status;
    const known = { ...section, status };
    return { path: file.path, status: file.status, before: side(known, '-'), after: side(known, '+') };
  });
}

/** How many paths a question lists before it says how many more there are. */
const LISTED = 15;

function listed(lines: string[]): string[] {
  return lines.length <= LISTED ? lines : [...lines.slice(0, LISTED), `… and ${lines.length - LISTED} more`];
}

/** A modal question: the message, its detail, and the button that goes ahead. */
export interface Question {
  message: string;
  detail: string;
  confirm: string;
}

/** The question before a rewind, from what its dry run says would change. */
export function rewindQuestion(task: string, phase: string, dry: RewindTaskResult): Question {
  const changes = dry.changes.map((c) => `${c.action === 'remove' ? 'remove' : c.action === 'restore' ? 'restore' : c.action} ${c.path}`);
  const detail = [
    changes.length > 0
      ? `These files go back to how they were when the task entered ${phase}:`
      : `No file changes: the workspace is as it was when the task entered ${phase}.`,
    ...listed(changes),
    '',
    `The task goes back to the start of ${phase}; what it did since is cut from its conversation, and it can be resumed from there.`,
  ];
  if (dry.conflicts.length > 0) {
    detail.push('', 'You changed these files after the task last touched them; rawko will not overwrite them without asking again:', ...listed(dry.conflicts));
  }
  return { message: `Rewind "${task}" to the start of ${phase}?`, detail: detail.join('\n'), confirm: 'Rewind' };
}

/** The question after a rewind that the user's own changes stopped. */
export function conflictQuestion(phase: string, result: RewindTaskResult): Question {
  const count = result.conflicts.length;
  return {
    message: `rawko did not rewind to ${phase}: you changed ${count === 1 ? 'a file' : `${count} files`} it would overwrite`,
    detail: [
      'Changed by you after the task last touched them:',
      ...listed(result.conflicts),
      '',
      'Rewind Anyway overwrites your changes to them too.',
    ].join('\n'),
    confirm: 'Rewind Anyway',
  };
}

/** What a phase row's command names: the task and the entry's place in `TaskDetail.phases`. */
export interface PhaseTarget {
  taskId: string;
  at: number;
}

/** The host's part: the server, opening documents, and the task's output and refresh. */
export interface CheckpointsHost {
  rpc(): Rpc | undefined;
  /** Opens the files' sides in the diff editor; resolves false when it could not. */
  openSides(title: string, files: FileSides[]): Promise<boolean>;
  /** Opens `text` as a read-only document of language `diff`. */
  openText(title: string, text: string): Promise<void>;
  note(taskId: string, text: string): void;
  /** Asks rawko for the task afresh (`rawko/getTask`): its phases and place after a rewind. */
  refresh(taskId: string): Promise<void>;
  resume(taskId: string): Promise<void>;
}

/** The phase a row stands for, with the task; undefined when the row is not a concrete phase. */
export function phaseOf(task: TaskView | undefined, at: number): PhaseNode | undefined {
  const phase = task?.phases?.[at];
  return phase && phase.kind !== 'scope' && phase.index !== undefined ? phase : undefined;
}

export class Checkpoints {
  constructor(
    private readonly vs: Pick<Vs, 'window'>,
    private readonly store: TaskStore,
    private readonly host: CheckpointsHost,
  ) {}

  private target(arg: unknown): { task: TaskView; phase: PhaseNode; index: number } | undefined {
    const { taskId, at } = (arg ?? {}) as { taskId?: unknown; at?: unknown };
    const task = typeof taskId === 'string' ? this.store.get(taskId) : undefined;
    const phase = typeof at === 'number' ? phaseOf(task, at) : undefined;
    if (!task || !phase || phase.index === undefined) {
      void this.vs.window.showErrorMessage('rawko: pick a phase of a task in the Rawko view');
      return undefined;
    }
    return { task, phase, index: phase.index };
  }

  private server(): Rpc | undefined {
    const rpc = this.host.rpc();
    if (!rpc) {
      void this.vs.window.showErrorMessage('rawko: the server is not running (Rawko: Restart Server starts it)');
    }
    return rpc;
  }

  /** Show Changes: what the phase of the row `arg` changed, in the diff editor. */
  async showChanges(arg: unknown): Promise<void> {
    const target = this.target(arg);
    const rpc = target && this.server();
    if (!target || !rpc) {
      return;
    }
    const { task, phase, index } = target;
    let result: PhaseDiffResult;
    try {
      result = await rpc.request(Requests.phaseDiff, { taskId: task.taskId, index });
    } catch (error) {
      void this.vs.window.showErrorMessage(`rawko: could not show what ${phase.name} changed: ${errorOf(error).message}`);
      return;
    }
    if (result.diff.trim() === '' && result.files.length === 0) {
      void this.vs.window.showInformationMessage(`rawko: ${phase.name} changed no file`);
      return;
    }
    const title = `${phase.name}: what the phase changed (${task.description ?? task.taskId})`;
    if (!(await this.host.openSides(title, fileSides(result)))) {
      await this.host.openText(title, result.diff);
    }
  }

  /** Rewind to This Phase: asks with what a dry run says, rewinds, and asks again on the user's own changes. */
  async rewind(arg: unknown): Promise<void> {
    const target = this.target(arg);
    const rpc = target && this.server();
    if (!target || !rpc) {
      return;
    }
    const { task, phase, index } = target;
    const taskId = task.taskId;
    const send = (extra: { dryRun?: boolean; force?: boolean }) => rpc.request(Requests.rewindTask, { taskId, index, ...extra });
    try {
      const dry = await send({ dryRun: true });
      const name = dry.phase || phase.name;
      const ask = rewindQuestion(task.description ?? taskId, name, dry);
      if ((await this.vs.window.showWarningMessage(ask.message, { modal: true, detail: ask.detail }, ask.confirm)) !== ask.confirm) {
        return;
      }
      let done = await send({});
      if (!done.rewound && done.conflicts.length > 0) {
        const again = conflictQuestion(name, done);
        if ((await this.vs.window.showWarningMessage(again.message, { modal: true, detail: again.detail }, again.confirm)) !== again.confirm) {
          return;
        }
        done = await send({ force: true });
      }
      if (!done.rewound) {
        void this.vs.window.showErrorMessage(`rawko: the task was not rewound: ${done.text || 'rawko gave no reason'}`);
        return;
      }
      this.host.note(taskId, done.text || `rewound to the start of ${name}`);
      await this.host.refresh(taskId);
      const resume = 'Resume Task';
      const choice = await this.vs.window.showInformationMessage(`rawko: rewound "${task.description ?? taskId}" to the start of ${name}`, resume);
      if (choice === resume) {
        await this.host.resume(taskId);
      }
    } catch (error) {
      void this.vs.window.showErrorMessage(`rawko: could not rewind to ${phase.name}: ${errorOf(error).message}`);
    }
  }
}
