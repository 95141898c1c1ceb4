/**
 * The rawko protocol as the extension sees it: a typed mirror of `docs/protocol.md` (the Rust
 * crate `rawko-protocol`). Like rust-analyzer's `lsp_ext.ts`, each method is one
 * `RequestType<P, R, void>` or `NotificationType<P>`, so sending, answering or handling a method
 * with the wrong params or result type is a compile error. `test/unit/protocol.test.ts` checks
 * every method and field here against the JSON Schemas in `protocol/schema/`.
 *
 * The server may add fields and enum values, so every enumerated value also admits an unknown
 * string, and the code that reads them never throws on one. The types come from `vscode-jsonrpc`
 * (what vscode-languageclient re-exports), which does not load the `vscode` module, so the unit
 * tests can import this file.
 */
import { NotificationType, RequestType } from 'vscode-jsonrpc';

/** An enumerated string value; a value this version does not know is still a string. */
type Open<T extends string> = T | (string & {});

export type TaskState = Open<
  'running' | 'waiting_approval' | 'countdown' | 'blocked' | 'interrupted' | 'complete' | 'failed' | 'cancelled'
>;
/** What a state means for the user: the task works by itself, waits for the user, or has ended. */
export type StateClass = Open<'busy' | 'waiting' | 'finished'>;
export type TaskOutcome = Open<'complete' | 'failed' | 'cancelled'>;
/** The external agent an external session fronts. */
export type ExternalAgent = Open<'claude' | 'gemini' | 'codex'>;
/** A command a task accepts now, named after the method that sends it (`resume` is `rawko/resumeTask`). */
export type TaskAction = Open<'resume' | 'retry' | 'reset' | 'interrupt' | 'cancel' | 'message' | 'setWorkflow'>;
export type ApprovalOption = 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always';
export type ApprovalOutcome = ApprovalOption | 'cancelled';
export type OutputKind = Open<
  | 'assistant_delta'
  | 'tool_call'
  | 'tool_result'
  | 'context_injected'
  | 'reminder'
  | 'hook_output'
  | 'completion'
  | 'error'
  | 'handoff'
  | 'subagent'
>;
export type StepAction = 'next' | 'loop' | 'status';

/** The params (or result) of a method that has none: `{}`. */
export type Empty = Record<string, never>;

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
  /** The concrete phases, a subworkflow counted by its own: what a task steps through. */
  phaseCount: number;
  /** The entries of the workflow's own phase list, a subworkflow counted as one: the breadcrumb's first `[i/N]`. */
  outerPhaseCount: number;
  show: Open<'user' | 'workflows'>;
  source: string;
}

/** What the server says of a task's state and place, besides the state itself (`rawko/status`, `TaskSummary`). */
export interface TaskLook {
  /** What the state means for the user; a client goes by it instead of lists of states. */
  stateClass: StateClass;
  /** Whether the task is an external agent's session (Claude Code through `rawko hook`). */
  external: boolean;
  /** Which external agent the session fronts; absent for rawko's own tasks. */
  externalAgent?: ExternalAgent;
  /** That agent's name for people (`Claude Code`, `Gemini CLI`), shown as it is. */
  externalAgentName?: string;
  /** `breadcrumbText` as its levels, outermost first, e.g. `["Feature", "🧪 Test [3/4]"]`. */
  breadcrumbLevels: string[];
  /** The state as words after the breadcrumb, e.g. ` — waiting for approval`; empty while running. */
  stateText: string;
  /** The commands the task accepts now; a client offers these instead of testing state names. */
  actions: TaskAction[];
  /** Set when the task is a subagent: another task's `delegate_to_subagents` call started it. */
  subagent?: SubagentInfo;
}

/**
 * A subagent: a task that another task's `delegate_to_subagents` call started, shown under that
 * task (`TaskSummary`, `TaskDetail`, `rawko/status`, `rawko/approveToolCall`). Absent for every other task.
 */
export interface SubagentInfo {
  /** The task that delegated (the orchestrator). */
  parentTaskId: string;
  /** The id of the parent's `delegate_to_subagents` call. */
  toolCallId: string;
  /** The subagent's place among that call's tasks, from 0. */
  index: number;
  /** The profile it runs (an agent file's name), e.g. `reviewer`. */
  profile: string;
  /** Its name to show: the task's `name` when the call gave one, else the profile. */
  name: string;
  /** The label to show, e.g. `reviewer (subagent of task-1795-1)`. */
  label: string;
  /** The parent's phase the subagent works in (its `index` in the parent's `TaskDetail.phases`); absent without a workflow. */
  phaseIndex?: number | null;
}

export interface TaskSummary extends TaskLook {
  taskId: string;
  description: string;
  workflow?: string;
  state: TaskState;
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

/** One entry of a task's workflow, flattened depth-first: a nested workflow (`scope`) or a concrete phase. */
export interface PhaseNode {
  kind: Open<'scope' | 'phase'>;
  /** For a phase: its position among the concrete phases, from 0 (`rawko/phasePrompt`'s `index`, `rawko/status`'s `phaseIndex`). */
  index?: number;
  name: string;
  emoji?: string;
  /** 0 for the task's own workflow's entries, 1 inside its subworkflow, … */
  depth: number;
  status: Open<'done' | 'current' | 'todo'>;
  /** The breadcrumb as one line had the task stood there. */
  breadcrumbText: string;
  /** For a phase: its id, the phase file's name without `.md` (e.g. `implement`). */
  id?: string;
  /** For a phase: whether rawko took a checkpoint when the task entered it (`rawko/phaseDiff`, `rawko/rewindTask`). */
  hasCheckpoint?: boolean;
}

export interface TaskDetail extends TaskSummary {
  breadcrumb: BreadcrumbItem[];
  history: HistoryEntry[];
  /** The task's workflow flattened in order; empty when it runs none. */
  phases: PhaseNode[];
}

export interface WorkflowDiagnostic {
  path: string;
  line?: number;
  column?: number;
  severity: Open<'error' | 'warning'>;
  workflow?: string;
  message: string;
}

// Client → server.

export interface TaskParams {
  taskId: string;
}

export interface StartTaskParams {
  description: string;
  workflow?: string;
  agent?: string;
  provider?: string;
  model?: string;
  script?: string;
}

export type StepParams = TaskParams & { action: StepAction };
export type SendMessageParams = TaskParams & { text: string };
export type ForceAgentParams = TaskParams & { agent: string };
export type SetWorkflowParams = TaskParams & { workflow: string };
export type PhasePromptParams = TaskParams & { index: number };

/** A phase's rendered context prompt (Markdown), as rawko injects it before the agent's turn. */
export interface PhasePromptResult {
  name: string;
  breadcrumbText: string;
  prompt: string;
}

/** `index`: a concrete phase's index (`PhaseNode.index`); absent: the whole task. */
export type PhaseDiffParams = TaskParams & { index?: number };

/** One file a task or a phase changed. */
export interface ChangedFile {
  /** Relative to the top of the repository the checkpoints are in. */
  path: string;
  status: Open<'added' | 'modified' | 'deleted'>;
}

/** What a task, or one phase of it, changed: git's unified diff between two of its checkpoints. */
export interface PhaseDiffResult {
  /** git's unified diff, without colour; empty when nothing changed. */
  diff: string;
  files: ChangedFile[];
  /** The checkpoints (commits) the diff goes from and to; null when there is none. */
  from?: string | null;
  to?: string | null;
}

/** `dryRun`: only say what would change; `force`: overwrite the files the user changed too. */
export type RewindTaskParams = TaskParams & { index: number; dryRun?: boolean; force?: boolean };

/** What a rewind does to one file: written back as the checkpoint has it, or removed (created since). */
export type RewindAction = Open<'restore' | 'remove'>;

export interface RewindChange {
  path: string;
  action: RewindAction;
}

/** What a rewind did, or (with `dryRun`, or stopped by `conflicts`) would do. */
export interface RewindTaskResult {
  /** Whether the workspace and the task went back; false for a dry run or when user changes stopped it. */
  rewound: boolean;
  /** The phase's name. */
  phase: string;
  changes: RewindChange[];
  /** Files the user changed after the task's last checkpoint that the rewind would overwrite. */
  conflicts: string[];
  /** What happened (or would), for people. */
  text: string;
}

/** The result of the requests that answer with text to show (`rawko/step`, `rawko/setWorkflow`). */
export type TextResult = { text: string };

// Server → client.

/** What every task notification carries: its task, and its place (`seq`) among the task's. */
interface TaskEvent extends TaskParams {
  seq: number;
}

export interface StatusParams extends TaskEvent, TaskLook {
  state: TaskState;
  breadcrumb: BreadcrumbItem[];
  /** The status line, e.g. `Feature > 🧪 Test [3/4] — waiting for approval`. */
  text: string;
  /** The key of the workflow the task runs; absent when it runs none. */
  workflow?: string;
  workflowName?: string;
  /** Where the task is, without its state: the breadcrumb line, or the description without a workflow. */
  breadcrumbText: string;
  reason?: string;
  /** The current phase's `index` in `TaskDetail.phases`; absent without a workflow or once it finished. */
  phaseIndex?: number;
  /**
   * How many concrete phases are done: those whose `index` is below it (every one once the workflow
   * finished; a cancelled task's from where it stopped on are to do); absent without a workflow.
   */
  phasesDone?: number;
}

export interface CountdownParams extends TaskEvent {
  secondsLeft: number;
  /** The text with rawko's hint, e.g. `⏳ Auto-continuing in 3s — interrupt to stop`. */
  text: string;
  /** The countdown alone, e.g. `⏳ Auto-continuing in 3s`. */
  label: string;
}

export interface OutputParams extends TaskEvent {
  kind: OutputKind;
  text: string;
  toolCallId?: string;
  tool?: string;
  input?: unknown;
  isError?: boolean;
  /** With `handoff`: the agent that takes over; with `subagent`: the subagent's type. */
  agent?: string;
  /** With `subagent`: the subagent's id, as the external agent names it. */
  agentId?: string;
}

export interface TaskFinishedParams extends TaskEvent {
  outcome: TaskOutcome;
  summary: string;
}

export interface ApproveToolCallParams {
  taskId: string;
  toolCallId: string;
  tool: string;
  input: unknown;
  phase: string;
  /** Why the call was blocked, as the model is told (`detail` is the same for people). */
  reason: string;
  /** Why the call was blocked, for people, e.g. `Write is blocked in the Plan phase (allowed: Read, Glob, Grep)`. */
  detail: string;
  options: Open<ApprovalOption>[];
  /** The call in one line, e.g. `Write notes.md (12 bytes)`. */
  summary: string;
  /** When rawko stops waiting and counts the call rejected: milliseconds since the Unix epoch. */
  expiresAt: number;
  timeoutSeconds: number;
  /** What happens without an answer, ready to show, e.g. `denied once if there is no answer within 120 s`. */
  timeoutText: string;
  /** The words before the time left in a live countdown, e.g. `denied in` (`denied in 1:05`). */
  timeoutLabel: string;
  /** Set when a subagent's tool call waits: `detail` then starts with its `label`. */
  subagent?: SubagentInfo;
}

/** rawko withdrew the trust question about this workspace (no answer in time). */
export interface TrustWithdrawnParams {
  workspace: string;
}

/** rawko withdrew the approval of this tool call (it timed out, or the task stopped waiting). */
export interface ApprovalWithdrawnParams extends TaskParams {
  toolCallId: string;
}

export type ApproveToolCallResult = { outcome: ApprovalOutcome };

export interface TrustWorkspaceParams {
  workspace: string;
  /** One line per hook, e.g. `PreToolUse: ./check.sh`. */
  hooks: string[];
  /**
   * One line per setting that chooses what runs or where keys go, e.g.
   * `provider anthropic at http://127.0.0.1:8080` (key values are never sent). Absent from older servers.
   */
  settings?: string[];
  /** Whether the hooks or settings changed since the workspace was last trusted. */
  changed: boolean;
}

export type TrustWorkspaceResult = { trusted: boolean };

/** What the server holds now (`rawko/serverStats`): for finding a leak. */
export interface ServerStatsResult {
  tasksInMemory: number;
  externalSessions: number;
  pendingClientRequests: number;
  runtimeTasks: number;
  openFiles: number;
  openLogs: number;
  logBatches: number;
  logRecords: number;
  logSyncs: number;
  rssBytes: number;
  peakRssBytes: number;
  logBacklogBytes: number;
  peakLogBacklogBytes: number;
  logBacklogWaits: number;
  outgoingBytes: number;
  peakOutgoingBytes: number;
  /** `[upper bound in µs, count]` (two numbers) per bucket of the append → announce latency. */
  announceLatencyMicros: number[][];
}

/** Client → server requests. */
export const Requests = {
  listWorkflows: new RequestType<Empty, { workflows: WorkflowSummary[] }, void>('rawko/listWorkflows'),
  startTask: new RequestType<StartTaskParams, { taskId: string }, void>('rawko/startTask'),
  cancelTask: new RequestType<TaskParams, Empty, void>('rawko/cancelTask'),
  step: new RequestType<StepParams, TextResult, void>('rawko/step'),
  interrupt: new RequestType<TaskParams, Empty, void>('rawko/interrupt'),
  sendMessage: new RequestType<SendMessageParams, Empty, void>('rawko/sendMessage'),
  listTasks: new RequestType<Empty, { tasks: TaskSummary[] }, void>('rawko/listTasks'),
  getTask: new RequestType<TaskParams, { task: TaskDetail }, void>('rawko/getTask'),
  resumeTask: new RequestType<TaskParams, Empty, void>('rawko/resumeTask'),
  rewindTask: new RequestType<RewindTaskParams, RewindTaskResult, void>('rawko/rewindTask'),
  forceAgent: new RequestType<ForceAgentParams, Empty, void>('rawko/forceAgent'),
  skipStep: new RequestType<TaskParams, Empty, void>('rawko/skipStep'),
  retry: new RequestType<TaskParams, Empty, void>('rawko/retry'),
  reset: new RequestType<TaskParams, Empty, void>('rawko/reset'),
  setWorkflow: new RequestType<SetWorkflowParams, TextResult, void>('rawko/setWorkflow'),
  validateWorkflows: new RequestType<Empty, { diagnostics: WorkflowDiagnostic[] }, void>('rawko/validateWorkflows'),
  phasePrompt: new RequestType<PhasePromptParams, PhasePromptResult, void>('rawko/phasePrompt'),
  phaseDiff: new RequestType<PhaseDiffParams, PhaseDiffResult, void>('rawko/phaseDiff'),
  serverStats: new RequestType<Empty, ServerStatsResult, void>('rawko/serverStats'),
};

/** Server → client requests: rawko asks, the extension answers. */
export const ServerRequests = {
  approveToolCall: new RequestType<ApproveToolCallParams, ApproveToolCallResult, void>('rawko/approveToolCall'),
  trustWorkspace: new RequestType<TrustWorkspaceParams, TrustWorkspaceResult, void>('rawko/trustWorkspace'),
};

/** Server → client notifications about a task, each with its place (`seq`) among the task's. */
export const Notifications = {
  status: new NotificationType<StatusParams>('rawko/status'),
  countdown: new NotificationType<CountdownParams>('rawko/countdown'),
  output: new NotificationType<OutputParams>('rawko/output'),
  taskFinished: new NotificationType<TaskFinishedParams>('rawko/taskFinished'),
};

/** Server → client notifications outside a task's ordered stream (no `seq`). */
export const ServerNotifications = {
  approvalWithdrawn: new NotificationType<ApprovalWithdrawnParams>('rawko/approvalWithdrawn'),
  /** The extension closes the trust question on its `$/cancelRequest`; this one is for clients that cannot see ids. */
  trustWithdrawn: new NotificationType<TrustWithdrawnParams>('rawko/trustWithdrawn'),
};

type ParamsOf<T> = T extends NotificationType<infer P> ? P : never;

/** One task notification, tagged with its name in `Notifications`. */
export type TaskNotification = {
  [K in keyof typeof Notifications]: { kind: K; params: ParamsOf<(typeof Notifications)[K]> };
}[keyof typeof Notifications];

/** The JSON-RPC error codes rawko answers with (`docs/protocol.md`, Errors). */
export const ErrorCode = {
  unknownTask: -32001,
  taskStateConflict: -32003,
  workflowNotFound: -32004,
} as const;
