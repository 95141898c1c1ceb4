/**
 * What rawko adds to a task's state and breadcrumb (`TaskLook`), filled in for the tests' own
 * messages as the server fills them: the class and words of each state, the breadcrumb line cut
 * into its levels. The tests stand in for rawko here; the extension itself derives none of it.
 */
import type { ApproveToolCallParams, BreadcrumbItem, StatusParams, TaskAction, TaskLook, TaskSummary } from '../../src/protocol';
import type { TaskView } from '../../src/tasks';

const CLASSES: Record<string, string> = {
  running: 'busy',
  countdown: 'busy',
  waiting_approval: 'waiting',
  blocked: 'waiting',
  interrupted: 'waiting',
  complete: 'finished',
  failed: 'finished',
  cancelled: 'finished',
};

const WORDS: Record<string, string> = {
  running: '',
  waiting_approval: ' — waiting for approval',
  countdown: ' — auto-continuing',
  blocked: ' — interrupted; send a message to continue',
  interrupted: ' — interrupted; resume to continue',
  complete: ' — complete',
  failed: ' — failed',
  cancelled: ' — cancelled',
};

/** The commands rawko accepts from a task in `state`, by the server's rule (`lsp/to_proto.rs` `actions`). */
export function actionsOf(state: string, external: boolean, hasWorkflow: boolean): TaskAction[] {
  const live = CLASSES[state] !== 'finished' && state !== 'interrupted';
  const actions: TaskAction[] = [];
  if (state === 'blocked' || (state === 'interrupted' && !external)) {
    actions.push('resume');
  }
  if ((state === 'failed' || state === 'interrupted') && !external) {
    actions.push('retry');
  }
  if (live || !external) {
    actions.push('reset');
  }
  if (live && state !== 'blocked') {
    actions.push('interrupt');
  }
  if (live) {
    actions.push('cancel', 'message');
  }
  if (state === 'running' && !hasWorkflow) {
    actions.push('setWorkflow');
  }
  return actions;
}

/**
 * The look rawko gives a task in `state` at `breadcrumbText`: the levels from the breadcrumb's
 * items when it has any, else the line as the one level.
 */
export function look(state: string, breadcrumbText: string, taskId = '', breadcrumb: BreadcrumbItem[] = [], workflow?: string): TaskLook {
  const [outer] = breadcrumb;
  const levels = outer
    ? [outer.name, ...breadcrumb.map((i) => `${i.emoji ? `${i.emoji} ` : ''}${i.phaseName} [${i.index}/${i.total}]`)]
    : breadcrumbText
      ? [breadcrumbText]
      : [];
  return {
    stateClass: CLASSES[state] ?? 'busy',
    external: taskId.startsWith('ext-'),
    breadcrumbLevels: levels,
    stateText: WORDS[state] ?? '',
    actions: actionsOf(state, taskId.startsWith('ext-'), workflow !== undefined),
  };
}

type Bare<T> = Omit<T, keyof TaskLook> & Partial<TaskLook>;

/** The phases done as rawko counts them: those before the current one; every one once the workflow finished. */
const ALL_DONE = 4294967295;

export function statusOf(params: Bare<StatusParams>): StatusParams {
  const phasesDone = params.workflow === undefined ? undefined : (params.phaseIndex ?? ALL_DONE);
  return { ...look(params.state, params.breadcrumbText, params.taskId, params.breadcrumb, params.workflow), phasesDone, ...params };
}

export function summaryOf(summary: Bare<TaskSummary>): TaskSummary {
  return { ...look(summary.state, summary.breadcrumbText, summary.taskId, [], summary.workflow), ...summary };
}

export function viewOf(view: Bare<TaskView>): TaskView {
  return { ...look(view.state, view.breadcrumbText, view.taskId, view.breadcrumb, view.workflow), ...view };
}

/** An approval's timeout wording as rawko words it. */
export function timeoutWords(seconds: number): Pick<ApproveToolCallParams, 'timeoutText' | 'timeoutLabel'> {
  return { timeoutText: `denied once if there is no answer within ${seconds} s`, timeoutLabel: 'denied in' };
}
