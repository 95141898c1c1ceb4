/**
 * The status bar item: the active task's breadcrumb from `rawko/status` behind an icon for its
 * state (`Release › Code Review [2/3] › 🔍 Static Analysis [1/2]`, shortened from the left by
 * whole levels and words, never mid-word), the countdown beside it (`⏳ 3s — Feature › 🧪 Test
 * [3/4]`), and the server's reason for a change (e.g. an approval that timed out) for a while.
 * Its tooltip has the full breadcrumb, the state and the reason; a click does what the state
 * calls for: interrupt a countdown, answer an approval, or open the task output. `renderStatus`
 * is the pure part; `StatusBar` applies it to the item. It follows the top-level tasks: a
 * subagent's status shows in the Rawko view, under its parent, never here.
 */
import type * as vscode from 'vscode';
import type { Clock, Timer } from './clock';
import type { TaskStore, TaskView } from './tasks';
import type { Vs } from './vs';

/** How long the server's reason for a change stays in the status bar text. */
export const REASON_MILLIS = 15_000;

/** The most characters the breadcrumb, and a reason, take in the status bar text. */
export const CRUMB_CHARS = 60;
export const REASON_CHARS = 40;

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

const graphemes = new Intl.Segmenter();

/** Characters as people count them (an emoji is one). */
export function width(text: string): number {
  return [...graphemes.segment(text)].length;
}

/** The first line of `text` in at most `max` characters: whole words from the start, then `…`. */
export function shortenRight(text: string, max: number): string {
  const line = (text.split('\n', 1)[0] ?? '').trim();
  if (width(line) <= max) {
    return line;
  }
  const words = line.split(' ');
  while (words.length > 1 && width(words.join(' ')) + 1 > max) {
    words.pop();
  }
  return `${words.join(' ')}…`;
}

/**
 * The breadcrumb's levels (rawko's `breadcrumbLevels`) joined by `›` in at most `max` characters: the outermost levels go
 * first (`… › 🔍 Static Analysis [1/2]`), then, when the innermost alone is too long, its first
 * words. A level or word is never cut.
 */
export function shortenLeft(levels: string[], max: number): string {
  const full = levels.join(' › ');
  if (width(full) <= max) {
    return full;
  }
  for (let start = 1; start < levels.length; start += 1) {
    const rest = `… › ${levels.slice(start).join(' › ')}`;
    if (width(rest) <= max) {
      return rest;
    }
  }
  const words = (levels[levels.length - 1] ?? '').split(' ');
  while (words.length > 1 && width(words.join(' ')) + 1 > max) {
    words.shift();
  }
  return `…${words.join(' ')}`;
}

/** The breadcrumb's levels as rawko gave them; until the first status comes, the description stands in. */
export function crumbLevels(task: TaskView): string[] {
  if (task.breadcrumbLevels.length > 0) {
    return task.breadcrumbLevels;
  }
  return [task.description ? shortenRight(task.description, CRUMB_CHARS) : 'rawko'];
}

/** The phase a task is in, from the innermost level rawko gave: `🧪 Test [3/4] in Feature`. */
export function phaseLine(task: TaskView): string | undefined {
  const inner = task.breadcrumb[task.breadcrumb.length - 1];
  const level = task.breadcrumbLevels[task.breadcrumbLevels.length - 1];
  return inner && level && `${level} in ${inner.name}`;
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
  // The breadcrumb (until the first status comes, the description stands in), the state as an
  // icon, or the countdown's seconds beside it.
  const crumb = shortenLeft(crumbLevels(task), CRUMB_CHARS);
  const fresh = task.reason && task.reasonAt !== undefined && now - task.reasonAt < REASON_MILLIS;
  const reason = fresh ? ` — ${shortenRight(task.reason ?? '', REASON_CHARS)}` : '';
  const others = othersRunning > 0 ? ` (+${othersRunning})` : '';
  // rawko/status clears the countdown when the task leaves it.
  const counting = task.countdown;
  // An external agent's session says whose it is: `Gemini CLI: Feature > 🧪 Test [3/4]`.
  const agent = task.externalAgentName ? `${task.externalAgentName}: ` : '';
  const text = counting ? `⏳ ${counting.secondsLeft}s — ${agent}${crumb}${others}` : `${stateIcon(task.state)} ${agent}${crumb}${reason}${others}`;

  // The tooltip's rows; a row without a value is left out.
  const rows = (
    [
      ['Task', task.description ?? task.taskId],
      ['Agent', task.externalAgentName],
      ['Breadcrumb', task.breadcrumbText || undefined],
      ['Phase', phaseLine(task)],
      ['State', counting ? `${task.state} — ${counting.label}` : task.state.replace(/_/g, ' ')],
      ['Reason', task.reason || undefined],
      ['Summary', task.summary ? shortenRight(task.summary, 200) : undefined],
      ['Id', task.taskId],
    ] satisfies [string, string | undefined][]
  ).filter((row): row is [string, string] => row[1] !== undefined);

  const waits = WAITING.get(task.state);
  const [command, hint] = waits ?? ['rawko.showOutput', 'Click to show the task output.'];
  return {
    text,
    tooltip: { title: `rawko: ${task.state.replace(/_/g, ' ')}`, rows, hint },
    command: { command, arguments: [task.taskId] },
    background: waits ? 'warning' : task.stateClass === 'finished' && task.outcome === 'failed' ? 'error' : undefined,
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
    // The top-level tasks only: a subagent's status never takes its parent's place (the active
    // task is a subagent when the user followed one: its parent stands for it).
    const task = this.store.topLevel(this.store.active());
    const now = this.clock.now();
    const others = this.store.all().filter((t) => !t.subagent && t.taskId !== task?.taskId && t.stateClass === 'busy').length;
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
