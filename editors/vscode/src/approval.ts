/**
 * Inline approval of blocked tool calls (`rawko/approveToolCall`). Each request is shown as a quick
 * pick that stays open when the focus moves away: its title is rawko's summary of the call (after
 * the subagent's label when a subagent made it), the phase that blocked it and the time left until
 * rawko's deadline (`expiresAt`); below the input, the prompt line gives the reason for people
 * (`detail`) in full, wrapped (VS Code 1.108 and later; before, it is the placeholder); the items are the options the server offers, the denials
 * first and none of them active, so Enter alone allows nothing, and, for Write and Edit, a diff
 * preview. A quick pick — unlike a notification — can be closed by the extension, so when
 * rawko withdraws the request (`$/cancelRequest` or `rawko/approvalWithdrawn`: the approval timed
 * out or the task ended) the prompt goes away. The title counts down to the deadline in rawko's
 * words (`timeoutLabel`: `denied in 1:05`). Requests from several tasks wait in line; hiding the prompt (Escape, or
 * another quick pick taking its place) answers nothing: the status bar and the Rawko view offer
 * it again, and the view answers it with its inline Allow and Deny.
 */
import type * as vscode from 'vscode';
import type { Clock, Timer } from './clock';
import { proposeChange } from './preview';
import type { ApprovalOutcome, ApproveToolCallParams, ApproveToolCallResult } from './protocol';
import type { Vs } from './vs';

/** The part of a JSON-RPC cancellation token the prompt needs. */
export interface CancellationTokenLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}

export interface ApprovalOptions {
  /** Opens a diff of what a Write or Edit would change. */
  openDiff(params: ApproveToolCallParams): Promise<void>;
  /** Called when the server withdrew a request before the user answered. */
  onWithdrawn?(params: ApproveToolCallParams): void;
  /** Called with each answer the user gave. */
  onAnswered?(params: ApproveToolCallParams, outcome: ApprovalOutcome): void;
}

interface ApprovalItem extends vscode.QuickPickItem {
  outcome?: ApprovalOutcome;
  diff?: boolean;
}

interface Pending {
  params: ApproveToolCallParams;
  resolve(result: ApproveToolCallResult): void;
  cancelSubscription: { dispose(): void };
}

/**
 * The options rawko may offer, denials first: each one's label and description (an option this
 * version does not know is left out).
 */
const OPTION_LABELS = new Map<string, [string, (tool: string) => string]>([
  ['reject_once', ['$(close) Deny', () => 'refuse this call; the agent is told why']],
  ['reject_always', ['$(circle-slash) Always deny', (tool) => `refuse ${tool} for the rest of the task`]],
  ['allow_once', ['$(check) Allow once', () => 'run this call']],
  ['allow_always', ['$(check-all) Always allow', (tool) => `run ${tool} for the rest of the task without asking`]],
]);

/** The user's answer in the words of the option chosen, as the output says it. */
export const ANSWER_WORDS: Record<ApprovalOutcome, string> = {
  allow_once: 'Allowed once',
  allow_always: 'Always allowed',
  reject_once: 'Denied',
  reject_always: 'Always denied',
  cancelled: 'Dismissed',
};

/**
 * The reason for people; an older rawko sends only the one written for the model. A subagent's
 * starts with its label (rawko puts it there; it is added when missing).
 */
export function approvalDetail(params: ApproveToolCallParams): string {
  const text = params.detail || params.reason;
  const label = params.subagent?.label;
  return label && !text.startsWith(label) ? `${label}: ${text}` : text;
}

/** Whether this VS Code shows a quick pick's `prompt` (finalized in 1.108). */
export function showsPrompt(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 1 || (major === 1 && minor >= 108);
}

/** `1:05`: minutes and seconds left. */
export function formatLeft(ms: number): string {
  const seconds = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
}

export class Approvals {
  private readonly pending: Pending[] = [];
  /** The prompt, while it shows the head of the line. */
  private picker: vscode.QuickPick<ApprovalItem> | undefined;
  private ticker: Timer | undefined;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly vs: Vs,
    private readonly clock: Clock,
    private readonly options: ApprovalOptions,
  ) {}

  /** Handles one `rawko/approveToolCall`: resolves with the user's answer. */
  ask(params: ApproveToolCallParams, token: CancellationTokenLike): Promise<ApproveToolCallResult> {
    if (token.isCancellationRequested) {
      return Promise.resolve({ outcome: 'cancelled' });
    }
    return new Promise<ApproveToolCallResult>((resolve) => {
      const entry: Pending = {
        params,
        resolve,
        cancelSubscription: { dispose: () => undefined },
      };
      entry.cancelSubscription = token.onCancellationRequested(() => this.settle(entry, 'cancelled', false));
      this.pending.push(entry);
      this.next();
      this.changed();
    });
  }

  /** The requests that wait for an answer (of one task, when given), first in line first. */
  waiting(taskId?: string): ApproveToolCallParams[] {
    return this.pending.filter((p) => taskId === undefined || p.params.taskId === taskId).map((p) => p.params);
  }

  /** Called whenever a request starts or stops waiting. */
  onDidChange(listener: () => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Answers the request for a tool call as the user chose elsewhere (the Rawko view's Allow and Deny). */
  answer(taskId: string, toolCallId: string, outcome: ApprovalOutcome): boolean {
    const entry = this.pending.find((p) => p.params.taskId === taskId && p.params.toolCallId === toolCallId);
    if (entry) {
      this.settle(entry, outcome, true);
    }
    return entry !== undefined;
  }

  /** Shows the prompt again after it was hidden, preferring a request of `taskId`. */
  reveal(taskId?: string): boolean {
    const index = Math.max(0, this.pending.findIndex((p) => taskId === undefined || p.params.taskId === taskId));
    const entry = this.pending[index];
    if (!entry) {
      return false;
    }
    if (index > 0) {
      this.pending.splice(index, 1);
      this.pending.unshift(entry);
      this.closePicker();
    }
    if (this.picker) {
      this.picker.show();
    } else {
      this.showHead();
    }
    return true;
  }

  /** Answers every request `cancelled` and closes the prompt (the server went away). */
  dispose(): void {
    this.closePicker();
    for (const entry of this.pending.splice(0)) {
      entry.cancelSubscription.dispose();
      entry.resolve({ outcome: 'cancelled' });
    }
    this.changed();
  }

  private changed(): void {
    for (const listener of [...this.listeners]) {
      listener();
    }
  }

  /** Takes `entry` out of the line with the user's answer, or `cancelled` when rawko withdrew it. */
  /** rawko withdrew the approval of this tool call (`rawko/approvalWithdrawn`): its prompt goes away. */
  withdraw(taskId: string, toolCallId: string): void {
    const entry = this.pending.find((p) => p.params.taskId === taskId && p.params.toolCallId === toolCallId);
    if (entry) {
      this.settle(entry, 'cancelled', false);
    }
  }

  private settle(entry: Pending, outcome: ApprovalOutcome, byUser: boolean): void {
    const index = this.pending.indexOf(entry);
    if (index < 0) {
      return; // settled already
    }
    if (index === 0) {
      this.closePicker();
    }
    this.pending.splice(index, 1);
    entry.cancelSubscription.dispose();
    if (byUser) {
      this.options.onAnswered?.(entry.params, outcome);
    } else {
      this.options.onWithdrawn?.(entry.params);
    }
    entry.resolve({ outcome });
    this.next();
    this.changed();
  }

  /** Shows the head of the line, or updates the shown prompt's count of waiting requests. */
  private next(): void {
    if (this.picker) {
      this.updateTitle();
    } else {
      this.showHead();
    }
  }

  private showHead(): void {
    const entry = this.pending[0];
    if (!entry) {
      return;
    }
    const { params } = entry;
    const picker = this.vs.window.createQuickPick<ApprovalItem>();
    this.picker = picker;
    picker.ignoreFocusOut = true;
    picker.matchOnDescription = false;
    const detail = approvalDetail(params);
    if (showsPrompt(this.vs.version)) {
      (picker as vscode.QuickPick<ApprovalItem> & { prompt?: string }).prompt = detail;
      picker.placeholder = `Allow or deny ${params.tool}? (nothing is chosen until you pick)`;
    } else {
      picker.placeholder = detail;
    }
    picker.items = this.items(params);
    // No option is active: Enter alone answers nothing.
    picker.activeItems = [];
    this.updateTitle();

    picker.onDidAccept(() => {
      const item = picker.selectedItems[0] ?? picker.activeItems[0];
      if (!item) {
        return;
      }
      if (item.diff) {
        picker.selectedItems = [];
        void this.options.openDiff(params).then(
          () => {
            if (this.picker === picker) {
              picker.show();
            }
          },
          () => undefined,
        );
        return;
      }
      if (item.outcome) {
        this.settle(entry, item.outcome, true);
      }
    });
    picker.onDidHide(() => {
      // Hidden without an answer (Escape, another quick pick): the request stays pending and
      // the status bar offers it again.
      if (this.picker === picker) {
        this.closePicker();
      }
    });

    this.ticker = this.clock.setInterval(() => {
      if (this.updateTitle() <= 0) {
        this.ticker?.cancel();
        this.ticker = undefined;
      }
    }, 1000);
    picker.show();
  }

  private items(params: ApproveToolCallParams): ApprovalItem[] {
    const offered = new Set<string>(params.options);
    const items: ApprovalItem[] = [...OPTION_LABELS]
      .filter(([option]) => offered.has(option))
      .map(([option, [label, description]]) => ({ label, description: description(params.tool), outcome: option as ApprovalOutcome }));
    // Write and Edit (the tools that name a file and its new text) get a diff preview.
    const change = proposeChange(params.tool, params.input, undefined);
    if (change) {
      items.push({ label: '', kind: this.vs.QuickPickItemKind.Separator });
      items.push({ label: '$(diff) Open diff preview', description: change.path, diff: true });
    }
    return items;
  }

  /** Sets the prompt's title; returns the milliseconds left until rawko's deadline. */
  private updateTitle(): number {
    const params = this.pending[0]?.params;
    if (!this.picker || !params) {
      return 0;
    }
    const left = params.expiresAt - this.clock.now();
    // A subagent's call names the subagent first (`reviewer (subagent of task-1-1): Write …`).
    const who = params.subagent?.label ? `${params.subagent.label}: ` : '';
    let title = `rawko: ${who}${params.summary} — blocked in phase ${params.phase}`;
    title += left > 0 ? ` (${params.timeoutLabel} ${formatLeft(left)})` : ' (timing out)';
    const waiting = this.pending.length - 1;
    if (waiting > 0) {
      title += ` [+${waiting} waiting]`;
    }
    this.picker.title = title;
    return left;
  }

  private closePicker(): void {
    this.ticker?.cancel();
    this.ticker = undefined;
    const picker = this.picker;
    this.picker = undefined;
    picker?.dispose();
  }
}
