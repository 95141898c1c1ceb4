/**
 * What the extension knows of rawko's tasks: for each task its state, breadcrumb, status line,
 * running countdown, outcome and phase tree, built from the server's notifications (already in
 * `seq` order) and from `rawko/listTasks` / `rawko/getTask`. The phase tree comes from
 * `rawko/getTask` once per task (again when its workflow changes); each `rawko/status` then moves
 * the current phase by its `phaseIndex`. It also decides which task is the active one: the one
 * the status bar shows and the commands act on unless the user picks another.
 */
import type { Clock } from './clock';
import {
  type ApproveToolCallParams,
  type CountdownParams,
  type OutputParams,
  type PhaseNode,
  type StatusParams,
  type TaskDetail,
  type TaskFinishedParams,
  type TaskOutcome,
  type TaskSummary,
} from './protocol';

/** A task as rawko last told of it (`rawko/status`, `rawko/countdown`, `rawko/taskFinished`), and what the extension adds. */
export interface TaskView
  extends Pick<
      StatusParams,
      'taskId' | 'state' | 'stateClass' | 'external' | 'externalAgentName' | 'actions' | 'breadcrumb' | 'breadcrumbLevels' | 'breadcrumbText' | 'stateText' | 'text' | 'workflow' | 'reason' | 'subagent'
    >,
    Partial<Pick<TaskFinishedParams, 'summary'>> {
  /** What the user asked for; unknown until the task was started here or described by the server. */
  description?: string;
  /** When the reason came, and whether it outlives the next change (it told of an outcome, not of a wait). */
  reasonAt?: number;
  reasonSticky?: boolean;
  /** How the task ended, once it has (`rawko/taskFinished`, or the summary of a finished task). */
  outcome?: TaskOutcome;
  /** The running auto-continue countdown, while the state is `countdown`. */
  countdown?: Pick<CountdownParams, 'label' | 'secondsLeft'>;
  /** When the task started, and when it ended (once finished). */
  startedAt?: number;
  endedAt?: number;
  /** The task's workflow flattened (`rawko/getTask`); undefined until fetched. */
  phases?: PhaseNode[];
  /** The current concrete phase (`phaseIndex`); undefined when none is, or not known yet. */
  phaseIndex?: number;
  /** How many concrete phases are done (`phasesDone`); undefined until a status says. */
  phasesDone?: number;
  /** The workflow (`''`: none) whose phases were last asked for, so a change asks again. */
  detailFor?: string;
  /**
   * An external agent's own subagents (Claude Code's Task tool), as its session's `rawko/output`
   * of kind `subagent` told of them, in the order they started. They are no rawko tasks.
   */
  externalSubagents?: ExternalSubagent[];
}

/** A subagent of an external agent: `subagent Explore started (agent-123)` … `stopped (agent-123)`. */
export interface ExternalSubagent {
  /** Its id, as the external agent names it (`agentId`). */
  agentId: string;
  /** Its type (`agent`), e.g. `Explore`. */
  agent: string;
  state: 'running' | 'complete';
  /** When it started (or, for one first heard of as stopped, when that was), and when it stopped. */
  startedAt: number;
  endedAt?: number;
}

/** Whether an output line of kind `subagent` tells of the subagent's stop: `… stopped (agent-123)`. */
export function subagentStopped(text: string): boolean {
  const words = [...text.matchAll(/ (started|stopped) \(/g)];
  return words[words.length - 1]?.[1] === 'stopped';
}

type Listener = (task: TaskView | undefined) => void;

export class TaskStore {
  private readonly tasks = new Map<string, TaskView>();
  private activeId: string | undefined;
  private readonly listeners = new Set<Listener>();

  constructor(private readonly clock: Clock) {}

  /** Called with the changed task (or `undefined` when everything was forgotten). */
  onDidChange(listener: Listener): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  get(taskId: string): TaskView | undefined {
    return this.tasks.get(taskId);
  }

  all(): TaskView[] {
    return [...this.tasks.values()];
  }

  /** The task the status bar shows and the commands act on first. */
  active(): TaskView | undefined {
    return this.activeId === undefined ? undefined : this.tasks.get(this.activeId);
  }

  setActive(taskId: string): void {
    this.ensure(taskId);
    this.activeId = taskId;
    this.emit(this.tasks.get(taskId));
  }

  /** The task was started from this editor: it becomes the active one. */
  started(taskId: string, description: string, workflow: string | undefined): void {
    const task = this.ensure(taskId);
    task.description = description;
    task.startedAt ??= this.clock.now();
    if (workflow !== undefined) {
      task.workflow = workflow;
    }
    this.activeId = taskId;
    this.emit(task);
  }

  /**
   * Fills in what `rawko/listTasks` or `rawko/getTask` says of a task. Its state comes from the
   * statuses once it is known, unless `restate`: after a rewind, which takes even a finished task
   * back to a phase without a status, the answer's state is the news.
   */
  describe(summary: TaskSummary | TaskDetail, restate = false): void {
    const known = this.tasks.has(summary.taskId) && !restate;
    const task = this.ensure(summary.taskId);
    task.description = summary.description;
    task.startedAt = summary.startedAt;
    if (summary.workflow !== undefined) {
      task.workflow = summary.workflow;
    }
    task.external = summary.external;
    task.externalAgentName = summary.externalAgentName;
    // A subagent stays one: a message without the field says nothing new of it.
    task.subagent = summary.subagent ?? task.subagent;
    if (!known) {
      task.state = summary.state;
      task.stateClass = summary.stateClass;
      task.actions = Array.isArray(summary.actions) ? summary.actions : [];
      task.outcome = summary.stateClass === 'finished' ? summary.state : undefined;
      if (summary.stateClass !== 'finished') {
        task.endedAt = undefined;
      }
      task.text = `${summary.breadcrumbText}${summary.stateText ?? ''}`;
      task.breadcrumbText = summary.breadcrumbText;
      task.breadcrumbLevels = Array.isArray(summary.breadcrumbLevels) ? summary.breadcrumbLevels : [];
      task.stateText = summary.stateText ?? '';
    }
    if (task.stateClass === 'finished') {
      task.endedAt ??= summary.updatedAt;
    }
    this.stopSubagents(task);
    if ('phases' in summary && Array.isArray(summary.phases)) {
      task.phases = summary.phases;
      task.detailFor = summary.workflow ?? '';
      // The phases' own marks are the news until the next status.
      task.phaseIndex = undefined;
      task.phasesDone = undefined;
    }
    this.emit(task);
  }

  /**
   * Whether the task's phase tree should be asked for (`rawko/getTask`): never asked, or asked for
   * another workflow. Answers true once per such change, so the caller asks once.
   */
  claimDetail(taskId: string): boolean {
    const task = this.ensure(taskId);
    const workflow = task.workflow ?? '';
    if (task.detailFor === workflow) {
      return false;
    }
    task.detailFor = workflow;
    return true;
  }

  status(params: StatusParams): void {
    const task = this.ensure(params.taskId);
    const moved = task.state !== params.state || task.text !== (params.text ?? '');
    task.state = params.state;
    task.stateClass = params.stateClass;
    task.actions = Array.isArray(params.actions) ? params.actions : [];
    task.external = params.external;
    task.externalAgentName = params.externalAgentName;
    task.subagent = params.subagent ?? task.subagent;
    // A retried or reset task runs again: how it ended before no longer holds.
    task.outcome = params.stateClass === 'finished' ? params.state : undefined;
    task.breadcrumb = Array.isArray(params.breadcrumb) ? params.breadcrumb : [];
    task.breadcrumbLevels = Array.isArray(params.breadcrumbLevels) ? params.breadcrumbLevels : [];
    task.breadcrumbText = params.breadcrumbText ?? '';
    task.stateText = params.stateText ?? '';
    task.text = params.text ?? '';
    task.workflow = params.workflow;
    task.phaseIndex = params.phaseIndex;
    task.phasesDone = params.phasesDone;
    if (params.state !== 'countdown') {
      task.countdown = undefined;
    }
    if (params.reason) {
      task.reason = params.reason;
      task.reasonAt = this.clock.now();
      task.reasonSticky = !waitsForApproval(params);
    } else if (moved && (!task.reasonSticky || waitsForApproval(params))) {
      // The reason of a wait for approval only describes that wait; a reason such as "no answer
      // within 120 s; Write was rejected" stays through the changes that quickly follow it, the
      // task's end included (rawko may announce the rest of a quick task at once): the status
      // bar shows it for a while, until the task asks something new.
      task.reason = undefined;
      task.reasonAt = undefined;
      task.reasonSticky = false;
    }
    this.stopSubagents(task);
    this.adopt(task);
    this.emit(task);
  }

  /**
   * A blocked call of the task waits for an answer (`rawko/approveToolCall`). A task known here
   * is left as its statuses say. One not known — a team task (`rawko serve --nats`) on another
   * machine whose status has not come, e.g. while the team's record of it says it is queued — is
   * added, waiting for approval, so the Rawko view lists the call under it and the status bar
   * offers it; its first status then tells the rest.
   */
  asked(params: Pick<ApproveToolCallParams, 'taskId' | 'subagent'>): void {
    if (this.tasks.has(params.taskId)) {
      return;
    }
    const task = this.ensure(params.taskId);
    task.state = 'waiting_approval';
    task.stateClass = 'waiting';
    task.subagent = params.subagent;
    this.adopt(task);
    this.emit(task);
  }

  /**
   * An output line: one of kind `subagent` (an external agent's own subagent started or stopped)
   * adds it to its task's `externalSubagents` or marks it complete. Other lines change nothing here.
   */
  output(params: OutputParams): void {
    if (params.kind !== 'subagent') {
      return;
    }
    const agentId = params.agentId || params.agent || '';
    if (!agentId) {
      return;
    }
    const task = this.ensure(params.taskId);
    const subs = (task.externalSubagents ??= []);
    const now = this.clock.now();
    let sub = subs.find((s) => s.agentId === agentId);
    if (!sub) {
      sub = { agentId, agent: params.agent || agentId, state: 'running', startedAt: now };
      subs.push(sub);
    } else if (params.agent) {
      sub.agent = params.agent;
    }
    if (subagentStopped(params.text)) {
      sub.state = 'complete';
      sub.endedAt ??= now;
    } else {
      // Started (again): it runs.
      sub.state = 'running';
      sub.endedAt = undefined;
    }
    this.emit(task);
  }

  countdown(params: CountdownParams): void {
    const task = this.ensure(params.taskId);
    task.state = 'countdown';
    task.countdown = { label: params.label, secondsLeft: params.secondsLeft };
    this.adopt(task);
    this.emit(task);
  }

  finished(params: TaskFinishedParams): void {
    const task = this.ensure(params.taskId);
    task.summary = params.summary;
    task.outcome = params.outcome;
    task.countdown = undefined;
    task.endedAt ??= this.clock.now();
    // The task's last notification: it has ended, whatever status came before.
    if (task.stateClass !== 'finished') {
      task.state = params.outcome;
      task.stateClass = 'finished';
    }
    this.stopSubagents(task);
    this.emit(task);
  }

  /** A task that has finished has no external subagent running any more. */
  private stopSubagents(task: TaskView): void {
    if (task.stateClass !== 'finished') {
      return;
    }
    for (const sub of task.externalSubagents ?? []) {
      if (sub.state === 'running') {
        sub.state = 'complete';
        sub.endedAt ??= task.endedAt ?? this.clock.now();
      }
    }
  }

  /** Forgets everything, e.g. after the server restarted. */
  clear(): void {
    this.tasks.clear();
    this.activeId = undefined;
    this.emit(undefined);
  }

  /**
   * The top-level task `task` belongs to: itself, or for a subagent the task that delegated to it
   * (through its parent's parent, …); undefined while that task is not known here yet.
   */
  topLevel(task: TaskView | undefined): TaskView | undefined {
    const seen = new Set<string>();
    let at = task;
    while (at?.subagent && !seen.has(at.taskId)) {
      seen.add(at.taskId);
      at = this.tasks.get(at.subagent.parentTaskId);
    }
    return at?.subagent ? undefined : at;
  }

  /**
   * A task that shows signs of life becomes active when the active one is done or absent; a
   * subagent never does: the status bar follows the top-level tasks.
   */
  private adopt(task: TaskView): void {
    if (task.subagent) {
      return;
    }
    const active = this.active();
    if (!active || (active.taskId !== task.taskId && active.stateClass === 'finished')) {
      this.activeId = task.taskId;
    }
  }

  private ensure(taskId: string): TaskView {
    let task = this.tasks.get(taskId);
    if (!task) {
      task = {
        taskId,
        state: 'running',
        stateClass: 'busy',
        actions: [],
        external: false,
        breadcrumb: [],
        breadcrumbLevels: [],
        breadcrumbText: '',
        stateText: '',
        text: '',
      };
      this.tasks.set(taskId, task);
    }
    return task;
  }

  private emit(task: TaskView | undefined): void {
    for (const listener of [...this.listeners]) {
      listener(task);
    }
  }
}

/**
 * Whether the task waits for an approval: the one wait that still takes an interrupt (rawko's
 * `actions`), so no state name is tested.
 */
function waitsForApproval(params: Pick<StatusParams, 'stateClass' | 'actions'>): boolean {
  return params.stateClass === 'waiting' && Array.isArray(params.actions) && params.actions.includes('interrupt');
}
