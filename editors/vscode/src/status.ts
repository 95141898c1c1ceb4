/**
 * The status bar item: the active task's breadcrumb from `rawko/status` behind an icon for its
 * state, the countdown (`⏳ Auto-continuing in 3s — click to interrupt`), and the server's reason
 * for a change (e.g. an approval that timed out) for a while. Its tooltip names the task and the
 * phase; a click does what the state calls for: interrupt a countdown, answer an approval, or
 * open the task output. `renderStatus` is the pure part; `StatusBar` applies it to the item.
 */
import type * as vscode from 'vscode';
import type { Clock, Timer } from './clock';
import { isBusy } from './protocol';
import type { TaskStore, TaskView } from './tasks';
import type { Vs } from './vs';

/** How long the server's reason for a change stays in the status bar text. */
export const REASON_MILLIS = 15_000;

export type ServerState = 'starting' | 'running' | 'stopped' | 'missing';

export interface StatusLook {
  text: string;
  /** Tooltip lines: a title, then label/value pairs, then a hint of what a click does. */
  tooltip: { title: string; rows: [string, string][]; hint: string };
  command: { command: string; arguments: unknown[] };
  background?: 'warning' | 'error';
}

const STATE_ICONS: Record<string, string> = {
  running: '$(sync~spin)',
  waiting_approval: '$(shield)',
  countdown: '$(watch)',
  blocked: '$(debug-pause)',
  interrupted: '$(debug-disconnect)',
  complete: '$(check)',
  failed: '$(error)',
  cancelled: '$(circle-slash)',
};

/** The states that wait for the user: the command a click runs, and its hint. */
const WAITING = new Map<string, [string, string]>([
  ['countdown', ['rawko.interrupt', 'Click to interrupt the countdown.']],
  ['waiting_approval', ['rawko.showApproval', 'Click to answer the approval.']],
]);

export function stateIcon(state: string): string {
  return STATE_ICONS[state] ?? '$(question)';
}

function shorten(text: string, max: number): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** The phase a task is in, from the innermost breadcrumb item: `🧪 Test [3/4] in Feature`. */
export function phaseLine(task: TaskView): string | undefined {
  const inner = task.breadcrumb[task.breadcrumb.length - 1];
  return inner && `${inner.emoji ? `${inner.emoji} ` : ''}${inner.phaseName} [${inner.index}/${inner.total}] in ${inner.name}`;
}

export function renderStatus(
  server: ServerState,
  task: TaskView | undefined,
  now: number,
  othersRunning = 0,
): StatusLook {
  if (!task || server !== 'running') {
    return renderIdle(server, task !== undefined);
  }
  // rawko's status line (`Feature > 🧪 Test [3/4] — complete`); until the first one comes, the
  // description stands in.
  const label = task.text || (task.description ? shorten(task.description, 40) : 'rawko');
  const fresh = task.reason && task.reasonAt !== undefined && now - task.reasonAt < REASON_MILLIS;
  const others = othersRunning > 0 ? ` (+${othersRunning})` : '';
  const text =
    task.state === 'countdown' && task.countdown
      ? `${task.countdown} — click to interrupt${others}`
      : `${stateIcon(task.state)} ${label}${fresh ? ` — ${task.reason ?? ''}` : ''}${others}`;

  // The tooltip's rows; a row without a value is left out.
  const rows = (
    [
      ['Task', task.description ?? task.taskId],
      ['Phase', phaseLine(task)],
      ['Breadcrumb', task.breadcrumb.length > 1 ? task.breadcrumbText : undefined],
      ['State', task.state.replace(/_/g, ' ')],
      ['Reason', task.reason || undefined],
      ['Summary', task.summary ? shorten(task.summary, 200) : undefined],
      ['Id', task.taskId],
    ] satisfies [string, string | undefined][]
  ).filter((row): row is [string, string] => row[1] !== undefined);

  const waits = WAITING.get(task.state);
  const [command, hint] = waits ?? ['rawko.showOutput', 'Click to show the task output.'];
  return {
    text,
    tooltip: { title: `rawko: ${task.state.replace(/_/g, ' ')}`, rows, hint },
    command: { command, arguments: [task.taskId] },
    background: waits ? 'warning' : task.state === 'failed' ? 'error' : undefined,
  };
}

/** The item without a task to show: the server's state, and what a click does about it. */
const IDLE: Record<ServerState, { text: string; title: string; hint: string; command: string; background?: 'error' }> = {
  starting: { text: '$(loading~spin) rawko', title: 'rawko: starting', hint: 'The rawko server is starting.', command: 'rawko.showOutput' },
  stopped: {
    text: '$(warning) rawko stopped',
    title: 'rawko: server stopped',
    hint: 'Click to restart the server.',
    command: 'rawko.restartServer',
    background: 'error',
  },
  missing: {
    text: '$(warning) rawko not installed',
    title: 'rawko: binary not found',
    hint: 'Install rawko or set rawko.server.path, then click to try again.',
    command: 'rawko.restartServer',
    background: 'error',
  },
  running: { text: '$(hubot) rawko', title: 'rawko: ready', hint: 'Click to start a task.', command: 'rawko.start' },
};

function renderIdle(server: ServerState, hasTask: boolean): StatusLook {
  const { text, title, hint, command, background } = IDLE[server];
  const resume = server === 'stopped' && hasTask ? 'Click to restart the server; tasks resume from the task store.' : hint;
  return { text, tooltip: { title, rows: [], hint: resume }, command: { command, arguments: [] }, background };
}

/** Keeps one status bar item in step with the task store and the server's state. */
export class StatusBar {
  private readonly item: vscode.StatusBarItem;
  private server: ServerState = 'starting';
  private reasonTimer: Timer | undefined;
  private readonly subscription: { dispose(): void };

  constructor(
    private readonly vs: Vs,
    private readonly clock: Clock,
    private readonly store: TaskStore,
  ) {
    this.item = vs.window.createStatusBarItem('rawko.status', vs.StatusBarAlignment.Left, 10);
    this.item.name = 'rawko';
    this.subscription = store.onDidChange(() => this.render());
    this.render();
    this.item.show();
  }

  setServerState(state: ServerState): void {
    this.server = state;
    this.render();
  }

  render(): void {
    const task = this.store.active();
    const now = this.clock.now();
    const others = this.store.all().filter((t) => t.taskId !== task?.taskId && isBusy(t.state)).length;
    const look = renderStatus(this.server, task, now, others);
    this.item.text = look.text;
    // The server's texts go in as text (escaped), the labels and the layout as Markdown.
    const tooltip = new this.vs.MarkdownString('', true).appendMarkdown('**').appendText(look.tooltip.title).appendMarkdown('**\n\n');
    for (const [label, value] of look.tooltip.rows) {
      tooltip.appendMarkdown(`${label}: `).appendText(value).appendMarkdown('  \n');
    }
    this.item.tooltip = tooltip.appendMarkdown('\n').appendText(look.tooltip.hint);
    this.item.command = { title: 'rawko', ...look.command };
    this.item.backgroundColor =
      look.background === undefined
        ? undefined
        : new this.vs.ThemeColor(look.background === 'warning' ? 'statusBarItem.warningBackground' : 'statusBarItem.errorBackground');

    // Take the reason out of the text once it is old.
    this.reasonTimer?.cancel();
    const left = task?.reasonAt === undefined ? 0 : task.reasonAt + REASON_MILLIS - now;
    this.reasonTimer = left > 0 ? this.clock.setTimeout(() => this.render(), left) : undefined;
  }

  dispose(): void {
    this.reasonTimer?.cancel();
    this.subscription.dispose();
    this.item.dispose();
  }
}
