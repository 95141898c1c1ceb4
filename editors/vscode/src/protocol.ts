/**
 * The rawko protocol as the extension sees it: a TypeScript mirror of the wire types of
 * `docs/protocol.md` (the Rust crate `rawko-protocol`), one constant per method name.
 * Like rust-analyzer's `lsp_ext.ts`: fields may be added by the server, so every enumerated
 * value also admits an unknown string, and the code that reads them never throws on one.
 */

export type TaskState =
  | 'running'
  | 'waiting_approval'
  | 'countdown'
  | 'blocked'
  | 'interrupted'
  | 'complete'
  | 'failed'
  | 'cancelled';

export type TaskOutcome = 'complete' | 'failed' | 'cancelled';

export type ApprovalOption = 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always';
export type ApprovalOutcome = ApprovalOption | 'cancelled';

export type OutputKind =
  | 'assistant_delta'
  | 'tool_call'
  | 'tool_result'
  | 'context_injected'
  | 'reminder'
  | 'hook_output'
  | 'completion'
  | 'error';

export type StepAction = 'next' | 'loop' | 'status';

export interface BreadcrumbItem {
  name: string;
  phaseName: string;
  emoji: string;
  index: number;
  total: number;
}

export interface WorkflowSummary {
  key: string;
  name: string;
  commandName: string;
  phaseCount: number;
  show: 'user' | 'workflows' | (string & {});
  source: string;
}

export interface TaskSummary {
  taskId: string;
  description: string;
  workflow?: string;
  state: TaskState | (string & {});
  breadcrumbText: string;
  startedAt: number;
  updatedAt?: number;
}

export interface HistoryEntry {
  seq: number;
  at: number;
  event: string;
  stateBefore?: string;
  stateAfter?: string;
  guard?: string;
  detail?: string;
}

export interface TaskDetail extends TaskSummary {
  breadcrumb: BreadcrumbItem[];
  history: HistoryEntry[];
}

export interface WorkflowDiagnostic {
  path: string;
  line?: number;
  column?: number;
  severity: 'error' | 'warning' | (string & {});
  workflow?: string;
  message: string;
}

export interface StartTaskParams {
  description: string;
  workflow?: string;
  agent?: string;
  provider?: string;
  model?: string;
  script?: string;
}

// Server → client.

export interface StatusParams {
  taskId: string;
  seq: number;
  state: TaskState | (string & {});
  breadcrumb: BreadcrumbItem[];
  text: string;
  reason?: string;
}

export interface CountdownParams {
  taskId: string;
  seq: number;
  secondsLeft: number;
  text: string;
}

export interface OutputParams {
  taskId: string;
  seq: number;
  kind: OutputKind | (string & {});
  text: string;
  toolCallId?: string;
  tool?: string;
  input?: unknown;
  isError?: boolean;
}

export interface TaskFinishedParams {
  taskId: string;
  seq: number;
  outcome: TaskOutcome | (string & {});
  summary: string;
}

export interface ApproveToolCallParams {
  taskId: string;
  toolCallId: string;
  tool: string;
  input: unknown;
  phase: string;
  reason: string;
  options: (ApprovalOption | (string & {}))[];
}

export interface ApproveToolCallResult {
  outcome: ApprovalOutcome;
}

export interface TrustWorkspaceParams {
  workspace: string;
  /** One line per hook, e.g. `PreToolUse: ./check.sh`. */
  hooks: string[];
  /** Whether the hooks changed since the workspace was last trusted. */
  changed: boolean;
}

export interface TrustWorkspaceResult {
  trusted: boolean;
}

/** A notification that belongs to a task and carries its place among the task's notifications. */
export type TaskNotification =
  | { method: typeof Method.status; params: StatusParams }
  | { method: typeof Method.countdown; params: CountdownParams }
  | { method: typeof Method.output; params: OutputParams }
  | { method: typeof Method.taskFinished; params: TaskFinishedParams };

export const Method = {
  listWorkflows: 'rawko/listWorkflows',
  startTask: 'rawko/startTask',
  cancelTask: 'rawko/cancelTask',
  step: 'rawko/step',
  interrupt: 'rawko/interrupt',
  sendMessage: 'rawko/sendMessage',
  listTasks: 'rawko/listTasks',
  getTask: 'rawko/getTask',
  resumeTask: 'rawko/resumeTask',
  retry: 'rawko/retry',
  setWorkflow: 'rawko/setWorkflow',
  validateWorkflows: 'rawko/validateWorkflows',
  approveToolCall: 'rawko/approveToolCall',
  trustWorkspace: 'rawko/trustWorkspace',
  status: 'rawko/status',
  countdown: 'rawko/countdown',
  output: 'rawko/output',
  taskFinished: 'rawko/taskFinished',
} as const;

/** The states after which a task sends nothing more. */
export function isFinished(state: string): boolean {
  return state === 'complete' || state === 'failed' || state === 'cancelled';
}

/** The JSON-RPC error codes rawko answers with (`docs/protocol.md`, Errors). */
export const ErrorCode = {
  unknownTask: -32001,
  taskStateConflict: -32003,
  workflowNotFound: -32004,
} as const;
