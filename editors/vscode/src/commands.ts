/**
 * The command palette's Rawko commands. Each is a method here, written against `Vs` and an `Rpc`
 * (the language client while the server runs) so the unit tests can drive them. A command that
 * needs the server while it is down says so instead of failing.
 */
import type * as vscode from 'vscode';
import type { RequestParam, RequestType } from 'vscode-jsonrpc';
import type { Approvals } from './approval';
import { firstLine, plainText } from './output';
import {
  ErrorCode,
  Requests,
  type StartTaskParams,
  type StatusParams,
  type StepAction,
  type TaskAction,
  type TaskSummary,
  type WorkflowSummary,
} from './protocol';
import { stateIcon } from './status';
import type { TaskStore } from './tasks';
import type { Vs } from './vs';

/** Sends a request of the typed mirror (`Requests` in protocol.ts). */
export interface Rpc {
  request<P, R>(type: RequestType<P, R, void>, params: RequestParam<P>): Promise<R>;
}

export interface StartSettings {
  provider: string;
  model: string;
  script: string;
}

export interface CommandHost {
  /** The client, or undefined while the server is not running. */
  rpc(): Rpc | undefined;
  settings(): StartSettings;
  /** Shows the output channel (without taking the focus when `preserveFocus`). */
  showOutput(preserveFocus: boolean): void;
  /** Writes a line of the extension's own to the output channel. */
  note(taskId: string | undefined, text: string): void;
}

interface WorkflowItem extends vscode.QuickPickItem {
  key: string | undefined;
}

/**
 * A task as a command sees it, to decide whether it applies and to offer it in a pick: rawko's
 * summary, or what the store knows when rawko cannot list the tasks.
 */
type TaskRow = Pick<TaskSummary, 'taskId' | 'state' | 'stateClass' | 'actions' | 'external' | 'workflow' | 'breadcrumbText'> & { description?: string; startedAt?: number };

interface ActionItem extends vscode.QuickPickItem {
  run(): Promise<void>;
}

/** The id of the command that starts a workflow in a task that runs none yet. */
export const PICK_WORKFLOW_COMMAND = 'rawko.pickWorkflow';
const PICK_WORKFLOW_BUTTON = 'Pick Workflow';

/** A task Rawko: Pick Workflow applies to: one that takes a workflow now (running, with none), as rawko says. */
export function runsNoWorkflow(task: TaskRow): boolean {
  return offers(task, 'setWorkflow');
}

/** Whether rawko says the task accepts `action` now. */
function offers(task: Pick<TaskRow, 'actions'>, action: TaskAction): boolean {
  return Array.isArray(task.actions) && task.actions.includes(action);
}

/** What rawko's error codes mean to a command that could not `verb`, said before rawko's message. */
const ERROR_MEANINGS: Record<number, (verb: string) => string> = {
  [ErrorCode.taskStateConflict]: (verb) => `cannot ${verb} now: `,
  [ErrorCode.unknownTask]: () => 'the task is gone: ',
  [ErrorCode.workflowNotFound]: () => 'no such workflow: ',
};

/** The error's message as rawko wrote it (one short line), and its code when it has one. */
export function errorOf(error: unknown): { message: string; code?: number } {
  const { message, code } = (error ?? {}) as { message?: unknown; code?: unknown };
  const text = typeof message === 'string' ? message : typeof error === 'string' ? error : JSON.stringify(error);
  return { message: text, code: typeof code === 'number' ? code : undefined };
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/**
 * What the breadcrumb counts: `3 phases, 5 steps` (the workflow's own phases, a subworkflow one of
 * them; then the concrete phases a task steps through), or `3 phases` when they are the same.
 */
export function phaseCounts(w: WorkflowSummary): string {
  const outer = w.outerPhaseCount ?? w.phaseCount; // an older rawko sends only phaseCount
  return outer === w.phaseCount ? plural(outer, 'phase') : `${plural(outer, 'phase')}, ${plural(w.phaseCount, 'step')}`;
}

export function workflowItems(workflows: WorkflowSummary[], withNone = true): WorkflowItem[] {
  const items: WorkflowItem[] = workflows
    .filter((w) => w.show !== 'workflows')
    .map((w) => ({
      label: w.name || w.key,
      description: `${phaseCounts(w)} · ${w.commandName || w.key}`,
      detail: w.source,
      key: w.key,
    }));
  if (withNone) {
    items.push({ label: '$(circle-slash) No workflow', description: 'the agent works without phases', key: undefined });
  }
  return items;
}

export class Commands {
  constructor(
    private readonly vs: Vs,
    private readonly store: TaskStore,
    private readonly approvals: Approvals,
    private readonly host: CommandHost,
  ) {}

  /** External sessions the "runs no workflow yet" notice was shown for. */
  private readonly noticed = new Set<string>();

  /** Rawko: Start Task — a description, then a workflow (or none). */
  async start(): Promise<string | undefined> {
    const rpc = this.needServer();
    if (!rpc) {
      return undefined;
    }
    const description = await this.vs.window.showInputBox({
      title: 'Rawko: Start Task',
      prompt: 'What should the agent do?',
      placeHolder: 'e.g. Add a --json flag to the list command',
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() === '' ? 'Describe the task in a few words' : undefined),
    });
    if (description === undefined || description.trim() === '') {
      return undefined;
    }
    const pick = await this.chooseWorkflow(rpc, 'Rawko: Start Task — workflow', true);
    if (!pick) {
      return undefined;
    }
    // A workflow, provider, model or script left empty is not sent: the server's default applies.
    const chosen = Object.entries({ workflow: pick.key, ...this.host.settings() }).filter(([, value]) => value);
    const params: StartTaskParams = { description: description.trim(), ...Object.fromEntries(chosen) };
    try {
      const { taskId } = await rpc.request(Requests.startTask, params);
      this.store.started(taskId, params.description, pick.key);
      this.host.showOutput(true);
      return taskId;
    } catch (error) {
      void this.vs.window.showErrorMessage(`rawko: the task did not start: ${errorOf(error).message}`);
      return undefined;
    }
  }

  /**
   * Rawko: Pick Workflow — starts a workflow (`rawko/setWorkflow`) in a running task that runs
   * none yet, e.g. an external agent's session that began without one.
   */
  async pickWorkflow(taskId?: string): Promise<void> {
    await this.onTask('pick a workflow for', taskId, runsNoWorkflow, async (rpc, id) => {
      const pick = await this.chooseWorkflow(rpc, 'Rawko: Pick Workflow', false);
      if (pick?.key === undefined) {
        return;
      }
      const { text } = await rpc.request(Requests.setWorkflow, { taskId: id, workflow: pick.key });
      this.host.note(id, text);
      void this.vs.window.showInformationMessage(`rawko: ${text}`);
    });
  }

  /**
   * Called for each `rawko/status`: the first time an external agent's session (`external`) runs
   * with no workflow, says so once and offers Rawko: Pick Workflow.
   */
  async statusArrived(params: StatusParams): Promise<void> {
    const id = params.taskId;
    if (!params.external || !runsNoWorkflow(params) || this.noticed.has(id)) {
      return;
    }
    this.noticed.add(id);
    const choice = await this.vs.window.showInformationMessage(
      `rawko: external session ${id} runs no workflow yet`,
      PICK_WORKFLOW_BUTTON,
    );
    if (choice === PICK_WORKFLOW_BUTTON) {
      await this.vs.commands.executeCommand(PICK_WORKFLOW_COMMAND, id);
    }
  }

  async cancel(taskId?: string): Promise<void> {
    await this.onTask('cancel', taskId, (t) => t.stateClass !== 'finished', async (rpc, id) => {
      await rpc.request(Requests.cancelTask, { taskId: id });
      this.host.note(id, 'cancelled by you');
    });
  }

  async step(action: StepAction, taskId?: string): Promise<void> {
    const verb = action === 'next' ? 'move to the next phase' : action === 'loop' ? 'loop' : 'describe';
    await this.onTask(verb, taskId, (t) => t.stateClass !== 'finished', async (rpc, id) => {
      const text = plainText((await rpc.request(Requests.step, { taskId: id, action })).text);
      this.host.note(id, text);
      void this.vs.window.showInformationMessage(`rawko: ${firstLine(text)}`);
    });
  }

  async interrupt(taskId?: string): Promise<void> {
    await this.onTask('interrupt', taskId, (t) => t.stateClass === 'busy', async (rpc, id) => {
      await rpc.request(Requests.interrupt, { taskId: id });
      this.host.note(id, 'interrupted by you; the task waits for you (Rawko: Show Tasks to resume)');
    });
  }

  /** Resumes an interrupted or blocked task, or retries a failed one, and follows it. */
  async rerun(how: 'resume' | 'retry', taskId?: string): Promise<void> {
    const fits = (t: TaskRow) => offers(t, how);
    await this.onTask(how, taskId, fits, async (rpc, id) => {
      await rpc.request(how === 'resume' ? Requests.resumeTask : Requests.retry, { taskId: id });
      this.store.setActive(id);
      this.host.note(id, how === 'resume' ? 'resumed' : 'retried');
      this.host.showOutput(true);
    });
  }

  showOutput(taskId?: string): void {
    if (taskId !== undefined && this.store.get(taskId)) {
      this.store.setActive(taskId);
    }
    this.host.showOutput(false);
  }

  showApproval(taskId?: string): void {
    if (!this.approvals.reveal(taskId)) {
      void this.vs.window.showInformationMessage('rawko: no tool call waits for your approval');
    }
  }

  /** Rawko: Show Tasks — every task; resume an interrupted one, retry a failed one, or follow one. */
  async showTasks(): Promise<void> {
    const rpc = this.needServer();
    if (!rpc) {
      return;
    }
    let tasks: TaskSummary[];
    try {
      tasks = (await rpc.request(Requests.listTasks, {})).tasks ?? [];
    } catch (error) {
      void this.vs.window.showErrorMessage(`rawko: could not list the tasks: ${errorOf(error).message}`);
      return;
    }
    if (tasks.length === 0) {
      void this.vs.window.showInformationMessage('rawko: no tasks yet; Rawko: Start Task starts one');
      return;
    }
    const picked = await this.vs.window.showQuickPick(tasks.map(taskItem), {
      title: 'Rawko: Tasks',
      placeHolder: 'Pick a task to resume, retry or follow',
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (!picked) {
      return;
    }
    const task = picked.task;
    this.store.describe(task);
    const actions = this.actionsFor(task);
    const chosen =
      actions.length === 1
        ? actions[0]
        : await this.vs.window.showQuickPick(actions, { title: `Rawko: ${task.description}`, placeHolder: 'What to do' });
    await chosen?.run();
  }

  /** What Rawko: Show Tasks offers to do with a task; each action says why when rawko refuses it. */
  private actionsFor(task: TaskSummary): ActionItem[] {
    const id = task.taskId;
    const actions: ActionItem[] = [];
    if (offers(task, 'resume')) {
      actions.push({ label: '$(debug-continue) Resume', description: 'continue from the last recorded step', run: () => this.rerun('resume', id) });
    }
    if (offers(task, 'retry')) {
      actions.push({ label: '$(refresh) Retry', description: 'try again from the task log', run: () => this.rerun('retry', id) });
    }
    actions.push({
      label: '$(output) Follow',
      description: 'show it in the status bar and the output',
      run: () => Promise.resolve(this.showOutput(id)),
    });
    if (task.stateClass !== 'finished') {
      actions.push({ label: '$(close) Cancel', description: 'stop the task', run: () => this.cancel(id) });
    }
    return actions;
  }

  /**
   * Lists the workflows and lets the user pick one (or, `withNone`, no workflow). Without a list
   * it warns, and offers only "no workflow" when that is allowed.
   */
  private async chooseWorkflow(rpc: Rpc, title: string, withNone: boolean): Promise<WorkflowItem | undefined> {
    let workflows: WorkflowSummary[] = [];
    try {
      workflows = (await rpc.request(Requests.listWorkflows, {})).workflows ?? [];
    } catch (error) {
      void this.vs.window.showWarningMessage(`rawko: could not list the workflows: ${errorOf(error).message}`);
      if (!withNone) {
        return undefined;
      }
    }
    const items = workflowItems(workflows, withNone);
    if (items.length === 0) {
      void this.vs.window.showInformationMessage('rawko: no workflow to pick');
      return undefined;
    }
    return this.vs.window.showQuickPick(items, {
      title,
      placeHolder: 'Which workflow guides the task?',
      ignoreFocusOut: true,
      matchOnDescription: true,
    });
  }

  /**
   * Runs `action` on the task the command is for: `taskId` when given, else the active task when
   * `fits` it, else the only fitting task, else the one the user picks.
   */
  private async onTask(
    verb: string,
    taskId: string | undefined,
    fits: (task: TaskRow) => boolean,
    action: (rpc: Rpc, taskId: string) => Promise<void>,
  ): Promise<void> {
    const rpc = this.needServer();
    if (!rpc) {
      return;
    }
    const id = taskId ?? (await this.pickTask(rpc, verb, fits));
    if (id === undefined) {
      return;
    }
    try {
      await action(rpc, id);
    } catch (error) {
      const { message, code } = errorOf(error);
      const meaning = code === undefined ? '' : (ERROR_MEANINGS[code]?.(verb) ?? '');
      void this.vs.window.showErrorMessage(`rawko: ${meaning}${message}`);
    }
  }

  private async pickTask(rpc: Rpc, verb: string, fits: (task: TaskRow) => boolean): Promise<string | undefined> {
    const active = this.store.active();
    if (active && fits(active)) {
      return active.taskId;
    }
    let tasks: TaskRow[];
    try {
      tasks = (await rpc.request(Requests.listTasks, {})).tasks ?? [];
    } catch {
      tasks = this.store.all();
    }
    const candidates = tasks.filter(fits);
    if (candidates.length === 0) {
      void this.vs.window.showInformationMessage(`rawko: no task to ${verb}`);
      return undefined;
    }
    if (candidates.length === 1) {
      return candidates[0]?.taskId;
    }
    const picked = await this.vs.window.showQuickPick(candidates.map(taskItem), {
      title: `Rawko: which task to ${verb}?`,
      matchOnDescription: true,
    });
    return picked?.task.taskId;
  }

  /** The client, or undefined (and an error message) while the server is not running. */
  needServer(): Rpc | undefined {
    const rpc = this.host.rpc();
    if (!rpc) {
      void this.vs.window.showErrorMessage('rawko: the server is not running (Rawko: Restart Server starts it)');
    }
    return rpc;
  }
}

function taskItem<T extends TaskRow>(task: T): vscode.QuickPickItem & { task: T } {
  const when = new Date(task.startedAt ?? NaN);
  const started = Number.isFinite(when.getTime()) ? when.toLocaleString() : '';
  return {
    label: `${stateIcon(task.state)} ${task.description ?? task.taskId}`,
    description: task.breadcrumbText,
    detail: [task.state.replace(/_/g, ' '), task.workflow, started, task.taskId].filter(Boolean).join(' · '),
    task,
  };
}
