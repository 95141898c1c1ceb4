/**
 * The Rawko view in the activity bar: the tasks as a tree. A task shows its state icon, its
 * description and how long it has run; under it, a pending approval (with inline Allow and Deny)
 * and its workflow's phases (`TaskDetail.phases`) marked ✓ done, ▶ current, ○ to do, a nested
 * workflow's phases indented under it. Selecting a phase opens its context prompt; a phase rawko
 * took a checkpoint at offers Show Changes and Rewind to This Phase (`checkpoints.ts`). The marks move
 * with each `rawko/status`'s `phaseIndex`; everything comes from the task store and the pending
 * approvals, which the server's notifications and requests fill, so the view never polls.
 * A subagent (a task with `subagent`: another task's `delegate_to_subagents` call started it) is no
 * top-level item: it shows under its parent task, under the phase it works in (`phaseIndex`) when
 * that phase is shown, else under the task itself, named by its `name` with its profile and state
 * beside it; its context menu acts on the subagent's own task id. A subagent whose parent is not
 * known yet shows at the top, by its `label`, until the parent comes.
 * An external agent's own subagents (Claude Code's Task tool: `externalSubagents`, from its
 * session's `rawko/output` of kind `subagent`) show the same way under the session's task, after
 * rawko's: named by their type, `Claude Code subagent · running · 12s` beside it, the same running
 * and complete icons; they are no rawko tasks, so their rows offer no actions.
 * `taskRow`, `phaseRows`, `approvalRow` and `externalSubagentRow` are the pure part; `TaskTree` hands their rows to VS Code.
 */
import type * as vscode from 'vscode';
import { approvalDetail } from './approval';
import type { Clock, Timer } from './clock';
import type { ApproveToolCallParams, PhaseNode } from './protocol';
import type { ExternalSubagent, TaskStore, TaskView } from './tasks';

/** What a row of the view stands for; VS Code hands it back to the commands run on the row. */
export type TreeNode =
  | { kind: 'task'; taskId: string }
  | { kind: 'approval'; taskId: string; toolCallId: string }
  /** `at`: the entry's place in `TaskDetail.phases`; `parent`: its scope's, when it is inside one. */
  | { kind: 'phase'; taskId: string; at: number; parent?: number }
  /** An external agent's own subagent, `agentId` in its session's `externalSubagents`. */
  | { kind: 'externalSubagent'; taskId: string; agentId: string };

export type Mark = 'done' | 'current' | 'todo';

export const MARKS: Record<Mark, string> = { done: '✓', current: '▶', todo: '○' };

/** A row as VS Code draws it. */
export interface Row {
  node: TreeNode;
  id: string;
  label: string;
  description?: string;
  tooltip?: string;
  /** A codicon, and its theme colour. */
  icon?: string;
  iconColor?: string;
  /** Rows under it: 'expanded' or 'collapsed'; none when absent. */
  children?: 'expanded' | 'collapsed';
  /** What the context menu and the inline actions offer (`viewItem` in package.json). */
  contextValue?: string;
  command?: { command: string; title: string; arguments: unknown[] };
}

const STATE_ICONS: Record<string, [string, string?]> = {
  running: ['sync~spin'],
  waiting_approval: ['shield', 'list.warningForeground'],
  countdown: ['watch', 'list.warningForeground'],
  blocked: ['debug-pause'],
  interrupted: ['debug-disconnect'],
  complete: ['pass', 'testing.iconPassed'],
  failed: ['error', 'testing.iconFailed'],
  cancelled: ['circle-slash'],
};

/** `45s`, `3m 05s`, `1h 02m`. */
export function formatElapsed(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) {
    return `${seconds}s`;
  }
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) {
    return `${minutes}m ${String(seconds % 60).padStart(2, '0')}s`;
  }
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
}

/** The actions a task's context menu offers now (the words of `viewItem` in package.json). */
export function taskActions(task: TaskView): string[] {
  const finished = task.stateClass === 'finished';
  const actions: string[] = [];
  if (task.workflow && !finished) {
    actions.push('next', 'loop');
  }
  if (task.stateClass === 'busy') {
    actions.push('interrupt');
  }
  // Resume and retry as rawko offers them (`actions`), not by state names.
  for (const action of ['resume', 'retry'] as const) {
    if (task.actions?.includes(action)) {
      actions.push(action);
    }
  }
  if (!finished) {
    actions.push('cancel');
  }
  return actions;
}

/** A task's state in words: rawko's (`stateText` without its dash), else the state's name. */
export function stateWords(task: TaskView): string {
  return task.stateText.replace(/^\s*—\s*/, '').trim() || task.state.replace(/_/g, ' ');
}

/**
 * A task's row. A subagent's is named by its `name` under its parent (`nested`), by its `label`
 * (`reviewer (subagent of task-1)`) at the top while its parent is not known; its profile and its
 * state in words go beside it: `reviewer · running · 45s`.
 */
export function taskRow(task: TaskView, now: number, active: boolean, nested = false): Row {
  const [icon, iconColor] = STATE_ICONS[task.state] ?? ['question'];
  const elapsed = task.startedAt === undefined ? undefined : formatElapsed((task.endedAt ?? now) - task.startedAt);
  const agent = task.externalAgentName;
  const sub = task.subagent;
  const tooltip = [
    sub?.label,
    task.description ?? task.taskId,
    agent && `${agent} session`,
    task.breadcrumbText,
    task.state.replace(/_/g, ' '),
    elapsed && `${elapsed} since it started`,
    task.taskId,
  ];
  // An external agent's session names its agent beside the time: `Claude Code · 1m 05s`.
  const beside = sub ? [sub.profile, stateWords(task), elapsed] : [agent, elapsed];
  return {
    node: { kind: 'task', taskId: task.taskId },
    id: `task/${task.taskId}`,
    label: sub ? (nested ? sub.name || sub.profile : sub.label || sub.name) : (task.description ?? task.taskId),
    description: beside.filter((part) => part).join(' · ') || undefined,
    tooltip: tooltip.filter((line) => line).join('\n'),
    icon,
    iconColor,
    children: active || task.stateClass !== 'finished' ? 'expanded' : 'collapsed',
    contextValue: ['task', ...taskActions(task)].join(' '),
  };
}

export function approvalRow(params: ApproveToolCallParams): Row {
  return {
    node: { kind: 'approval', taskId: params.taskId, toolCallId: params.toolCallId },
    id: `approval/${params.taskId}/${params.toolCallId}`,
    label: params.summary || params.tool,
    description: approvalDetail(params),
    tooltip: `${approvalDetail(params)}\n${params.timeoutText ? `${params.timeoutText}\n` : ''}Allow or deny it here, or click to open the prompt.`,
    icon: 'shield',
    iconColor: 'list.warningForeground',
    contextValue: 'approval',
    command: { command: 'rawko.showApproval', title: 'Answer', arguments: [params.taskId] },
  };
}

/**
 * The row of an external agent's own subagent under its session's task: its type, then whose
 * subagent it is and its state: `Explore`, `Claude Code subagent · running · 12s`. No rawko task,
 * so nothing in the context menu.
 */
export function externalSubagentRow(task: TaskView, sub: ExternalSubagent, now: number): Row {
  const [icon, iconColor] = STATE_ICONS[sub.state] ?? ['question'];
  const elapsed = formatElapsed((sub.endedAt ?? now) - sub.startedAt);
  const whose = `${task.externalAgentName ?? 'External agent'} subagent`;
  return {
    node: { kind: 'externalSubagent', taskId: task.taskId, agentId: sub.agentId },
    id: `externalSubagent/${task.taskId}/${sub.agentId}`,
    label: sub.agent,
    description: [whose, sub.state, elapsed].join(' · '),
    tooltip: [`${sub.agent}: ${task.externalAgentName ?? 'the external agent'}'s own subagent`, sub.state, `${elapsed} since it started`, sub.agentId].join('\n'),
    icon,
    iconColor,
    contextValue: 'externalSubagent',
  };
}

/** Where a phase stands: as the last status counts the phases (`phasesDone`, `phaseIndex`), else as rawko last described it. */
function markOf(task: TaskView, phase: PhaseNode): Mark {
  if (task.phasesDone !== undefined && phase.index !== undefined) {
    return phase.index < task.phasesDone ? 'done' : phase.index === task.phaseIndex ? 'current' : 'todo';
  }
  return phase.status === 'done' ? 'done' : phase.status === 'current' ? 'current' : 'todo';
}

/** The entries inside the scope at `at`: those after it that are deeper. */
function scopeEnd(phases: PhaseNode[], at: number): number {
  const depth = phases[at]?.depth ?? 0;
  let end = at + 1;
  while (end < phases.length && (phases[end]?.depth ?? 0) > depth) {
    end += 1;
  }
  return end;
}

/** The marks of every entry: a scope is current while one of its phases is, done when all are. */
export function phaseMarks(task: TaskView): Mark[] {
  const phases = task.phases ?? [];
  const marks = phases.map((p) => (p.kind === 'scope' ? undefined : markOf(task, p)));
  return marks.map((own, at) => {
    if (own) {
      return own;
    }
    const inner = marks.slice(at + 1, scopeEnd(phases, at)).filter((m): m is Mark => m !== undefined);
    if (inner.includes('current')) {
      return 'current';
    }
    return inner.length > 0 && inner.every((m) => m === 'done') ? 'done' : 'todo';
  });
}

/**
 * Whether the phase's Show Changes and Rewind are offered: rawko took a checkpoint when the task
 * entered it. `hasCheckpoint` is as of the last `rawko/getTask`, so a phase the task entered since
 * (its mark moved past to do) counts too when this rawko knows checkpoints at all.
 */
export function hasCheckpoint(phase: PhaseNode, mark: Mark): boolean {
  return phase.hasCheckpoint === true || (phase.hasCheckpoint !== undefined && mark !== 'todo');
}

/**
 * The rows under a task (`parent` undefined) or under its scope at `parent`: the entries one
 * level deeper, each marked; a scope holds its own entries, a phase opens its context prompt, and
 * a phase whose `index` is in `holding` holds the subagents that work in it.
 */
export function phaseRows(task: TaskView, parent?: number, holding: ReadonlySet<number> = new Set()): Row[] {
  const phases = task.phases ?? [];
  const marks = phaseMarks(task);
  const from = parent === undefined ? 0 : parent + 1;
  const to = parent === undefined ? phases.length : scopeEnd(phases, parent);
  const depth = parent === undefined ? Math.min(...phases.map((p) => p.depth)) : (phases[parent]?.depth ?? 0) + 1;
  const rows: Row[] = [];
  for (let at = from; at < to; at += 1) {
    const phase = phases[at];
    const mark = marks[at];
    if (!phase || !mark || phase.depth !== depth) {
      continue;
    }
    const scope = phase.kind === 'scope';
    const holds = !scope && phase.index !== undefined && holding.has(phase.index);
    rows.push({
      node: { kind: 'phase', taskId: task.taskId, at, parent },
      // A phase that comes to hold subagents is a new item to VS Code: one it showed as a leaf
      // would otherwise stay collapsed, its subagents hidden, whatever `children` says.
      id: `phase/${task.taskId}/${task.detailFor ?? ''}/${at}${holds ? '/subagents' : ''}`,
      label: `${MARKS[mark]} ${phase.emoji ? `${phase.emoji} ` : ''}${phase.name}`,
      description: mark === 'current' ? 'current' : undefined,
      tooltip: scope ? phase.breadcrumbText : `${phase.breadcrumbText}\nClick to open the phase's context prompt.`,
      children: scope || holds ? 'expanded' : undefined,
      contextValue: scope ? 'scope' : hasCheckpoint(phase, mark) ? 'phase checkpoint' : 'phase',
      command:
        !scope && phase.index !== undefined
          ? { command: 'rawko.openPhasePrompt', title: 'Open Context Prompt', arguments: [task.taskId, phase.index] }
          : undefined,
    });
  }
  return rows;
}

/** The part of the `vscode` module the view needs. */
export type TreeVs = Pick<typeof vscode, 'TreeItem' | 'ThemeIcon' | 'ThemeColor' | 'EventEmitter' | 'TreeItemCollapsibleState'>;

/** How often the elapsed times move while a task works. */
const TICK_MILLIS = 5_000;

/** The view's data: the tasks of the store, newest first, with their approvals and phases. */
export class TaskTree implements vscode.TreeDataProvider<TreeNode> {
  private readonly changed: vscode.EventEmitter<TreeNode | undefined>;
  readonly onDidChangeTreeData: vscode.Event<TreeNode | undefined>;
  private readonly subscriptions: { dispose(): void }[];
  private ticker: Timer | undefined;

  constructor(
    private readonly vs: TreeVs,
    private readonly clock: Clock,
    private readonly store: TaskStore,
    private readonly approvals: { waiting(taskId?: string): ApproveToolCallParams[]; onDidChange(listener: () => void): { dispose(): void } },
    /** Asks rawko for a task's phases (`rawko/getTask`) when the store does not have them yet. */
    private readonly wantDetail: (taskId: string) => void,
  ) {
    this.changed = new vs.EventEmitter<TreeNode | undefined>();
    this.onDidChangeTreeData = this.changed.event;
    this.subscriptions = [store.onDidChange(() => this.refresh()), approvals.onDidChange(() => this.refresh())];
  }

  getChildren(node?: TreeNode): TreeNode[] {
    return this.rows(node).map((row) => row.node);
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    const row = this.row(node);
    const { TreeItem, TreeItemCollapsibleState: State, ThemeIcon, ThemeColor } = this.vs;
    const item = new TreeItem(
      row?.label ?? '',
      row?.children === 'expanded' ? State.Expanded : row?.children === 'collapsed' ? State.Collapsed : State.None,
    );
    if (row) {
      item.id = row.id;
      item.description = row.description;
      item.tooltip = row.tooltip;
      item.contextValue = row.contextValue;
      item.command = row.command;
      if (row.icon) {
        item.iconPath = new ThemeIcon(row.icon, row.iconColor ? new ThemeColor(row.iconColor) : undefined);
      }
    }
    return item;
  }

  /** The row of a task's own node, or of an entry under it. */
  private row(node: TreeNode): Row | undefined {
    if (node.kind === 'task') {
      const task = this.store.get(node.taskId);
      return task && this.taskRow(task);
    }
    if (node.kind === 'externalSubagent') {
      const task = this.store.get(node.taskId);
      const sub = task?.externalSubagents?.find((s) => s.agentId === node.agentId);
      return task && sub && externalSubagentRow(task, sub, this.clock.now());
    }
    if (node.kind === 'approval') {
      const params = this.approvals.waiting(node.taskId).find((p) => p.toolCallId === node.toolCallId);
      return params && approvalRow(params);
    }
    const task = this.store.get(node.taskId);
    return task && phaseRows(task, node.parent, this.holding(task)).find((r) => r.node.kind === 'phase' && r.node.at === node.at);
  }

  private taskRow(task: TaskView): Row {
    return taskRow(task, this.clock.now(), this.store.active()?.taskId === task.taskId, this.placed(task));
  }

  /**
   * Whether `task` shows under its parent: it is a subagent whose parent is known here (and not,
   * through its own parents, itself). Otherwise it is a top-level item, so none is ever lost.
   */
  private placed(task: TaskView): boolean {
    const seen = new Set<string>([task.taskId]);
    let parent = task.subagent && this.store.get(task.subagent.parentTaskId);
    if (!parent) {
      return false;
    }
    while (parent?.subagent) {
      if (seen.has(parent.taskId)) {
        return false;
      }
      seen.add(parent.taskId);
      parent = this.store.get(parent.subagent.parentTaskId);
    }
    return true;
  }

  /** The subagents shown under `parent`: by delegation (the earliest started first), then by their place in it. */
  private subagents(parent: TaskView): TaskView[] {
    const subs = this.store.all().filter((t) => t.subagent?.parentTaskId === parent.taskId && this.placed(t));
    const callStart = new Map<string, number>();
    for (const sub of subs) {
      const call = sub.subagent?.toolCallId ?? '';
      callStart.set(call, Math.min(callStart.get(call) ?? Number.MAX_SAFE_INTEGER, sub.startedAt ?? Number.MAX_SAFE_INTEGER));
    }
    const key = (t: TaskView): [number, string, number] => {
      const call = t.subagent?.toolCallId ?? '';
      return [callStart.get(call) ?? 0, call, t.subagent?.index ?? 0];
    };
    return subs.sort((a, b) => {
      const [as, ac, ai] = key(a);
      const [bs, bc, bi] = key(b);
      return as - bs || ac.localeCompare(bc) || ai - bi;
    });
  }

  /** The concrete phases of `task` that the view shows, by their `index`. */
  private static shownPhases(task: TaskView): Set<number> {
    return new Set((task.phases ?? []).flatMap((p) => (p.kind !== 'scope' && p.index !== undefined ? [p.index] : [])));
  }

  /** The phase a subagent of `task` shows under: its `phaseIndex` when the view shows that phase. */
  private static phaseOf(sub: TaskView, shown: Set<number>): number | undefined {
    const at = sub.subagent?.phaseIndex;
    return typeof at === 'number' && shown.has(at) ? at : undefined;
  }

  /** The indexes of the phases of `task` that subagents work in. */
  private holding(task: TaskView): Set<number> {
    const shown = TaskTree.shownPhases(task);
    return new Set(this.subagents(task).flatMap((sub) => TaskTree.phaseOf(sub, shown) ?? []));
  }

  private rows(node: TreeNode | undefined): Row[] {
    if (!node) {
      const tasks = this.store
        .all()
        .filter((task) => !this.placed(task))
        .sort((a, b) => (b.startedAt ?? Number.MAX_SAFE_INTEGER) - (a.startedAt ?? Number.MAX_SAFE_INTEGER));
      return tasks.map((task) => this.taskRow(task));
    }
    const task = this.store.get(node.taskId);
    if (!task || node.kind === 'approval' || node.kind === 'externalSubagent') {
      return [];
    }
    const shown = TaskTree.shownPhases(task);
    const subs = this.subagents(task);
    if (node.kind === 'phase') {
      const phase = task.phases?.[node.at];
      if (phase?.kind === 'scope') {
        return phaseRows(task, node.at, this.holding(task));
      }
      return subs.filter((sub) => phase?.index !== undefined && TaskTree.phaseOf(sub, shown) === phase.index).map((sub) => this.taskRow(sub));
    }
    if (task.phases === undefined) {
      this.wantDetail(task.taskId);
    }
    return [
      ...this.approvals.waiting(task.taskId).map(approvalRow),
      ...phaseRows(task, undefined, this.holding(task)),
      // The subagents of no phase the view shows: under the task itself.
      ...subs.filter((sub) => TaskTree.phaseOf(sub, shown) === undefined).map((sub) => this.taskRow(sub)),
      // The external agent's own subagents, in the order they started.
      ...(task.externalSubagents ?? []).map((sub) => externalSubagentRow(task, sub, this.clock.now())),
    ];
  }

  /** Redraws the view; while a task works, its elapsed time moves on every few seconds. */
  private refresh(): void {
    this.changed.fire(undefined);
    const working = this.store.all().some((t) => t.stateClass !== 'finished');
    if (working && !this.ticker) {
      this.ticker = this.clock.setInterval(() => this.refresh(), TICK_MILLIS);
    } else if (!working && this.ticker) {
      this.ticker.cancel();
      this.ticker = undefined;
    }
  }

  dispose(): void {
    this.ticker?.cancel();
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
    this.changed.dispose();
  }
}
