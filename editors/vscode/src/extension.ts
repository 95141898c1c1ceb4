/**
 * The extension's entry point: builds one context (task store, sequencer, status bar, output,
 * approvals, client), registers the Rawko commands and starts `rawko serve`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Approvals } from './approval';
import { RawkoClient } from './client';
import { systemClock } from './clock';
import { Commands, PICK_WORKFLOW_COMMAND } from './commands';
import * as config from './config';
import { groupDiagnostics } from './diagnostics';
import { OutputFormatter } from './output';
import { proposeChange } from './preview';
import { isFinished, Requests, type ApproveToolCallParams, type TaskNotification, type WorkflowDiagnostic } from './protocol';
import { Sequencer } from './sequencer';
import { StatusBar } from './status';
import { TaskStore } from './tasks';

const PREVIEW_SCHEME = 'rawko-preview';

let context: Context | undefined;

export async function activate(extension: vscode.ExtensionContext): Promise<void> {
  context = new Context(extension);
  await context.start();
}

export async function deactivate(): Promise<void> {
  const ctx = context;
  context = undefined;
  await ctx?.dispose();
}

/** Everything the extension holds, created once per activation. */
class Context {
  readonly store = new TaskStore(systemClock);
  readonly output = vscode.window.createOutputChannel('rawko');
  readonly formatter = new OutputFormatter(this.output, (id) => this.store.get(id)?.description);
  readonly status = new StatusBar(vscode, systemClock, this.store);
  readonly diagnostics = vscode.languages.createDiagnosticCollection('rawko');
  readonly previews = new Map<string, string>();
  readonly sequencer: Sequencer;
  readonly approvals: Approvals;
  readonly client: RawkoClient;
  readonly commands: Commands;
  /** Tasks whose description was asked of the server already. */
  private readonly described = new Set<string>();
  private previewCount = 0;

  constructor(private readonly extension: vscode.ExtensionContext) {
    this.sequencer = new Sequencer(
      systemClock,
      (note) => this.deliver(note),
      (taskId) => void this.refresh(taskId),
    );
    this.approvals = new Approvals(vscode, systemClock, {
      openDiff: (params) => this.openDiff(params),
      onAnswered: (params, outcome) =>
        this.formatter.note(params.taskId, `${params.tool} ${outcome.replace(/_/g, ' ')} (your answer)`),
      onWithdrawn: (params) =>
        this.formatter.note(params.taskId, `the approval of ${params.tool} was withdrawn by rawko (timed out or the task ended)`),
    });
    this.client = new RawkoClient(this.approvals, {
      notification: (note) => this.sequencer.push(note),
      serverState: (state) => this.status.setServerState(state),
      started: () => {
        this.sequencer.reset();
        this.store.clear();
        this.described.clear();
      },
      stopped: () => this.approvals.dispose(),
    });
    this.commands = new Commands(vscode, this.store, this.approvals, {
      rpc: () => this.client.rpc(),
      settings: () => config.startSettings(),
      showOutput: (preserveFocus) => this.output.show(preserveFocus),
      note: (taskId, text) => this.formatter.note(taskId, text),
    });
    // Tasks that another client or an external agent started arrive as plain notifications:
    // ask the server what they are about.
    this.store.onDidChange((task) => {
      if (task && task.description === undefined && !this.described.has(task.taskId)) {
        this.described.add(task.taskId);
        void this.refresh(task.taskId);
      }
    });
  }

  async start(): Promise<void> {
    const ext = this.extension;
    const register = (id: string, run: (...args: unknown[]) => unknown): void => {
      ext.subscriptions.push(vscode.commands.registerCommand(id, run));
    };
    const taskArg = (args: unknown[]): string | undefined => (typeof args[0] === 'string' ? args[0] : undefined);
    register('rawko.start', () => this.commands.start());
    register('rawko.cancel', (...args) => this.commands.cancel(taskArg(args)));
    register('rawko.nextPhase', (...args) => this.commands.step('next', taskArg(args)));
    register('rawko.loopPhase', (...args) => this.commands.step('loop', taskArg(args)));
    register('rawko.interrupt', (...args) => this.commands.interrupt(taskArg(args)));
    register('rawko.showOutput', (...args) => this.commands.showOutput(taskArg(args)));
    register('rawko.showTasks', () => this.commands.showTasks());
    register(PICK_WORKFLOW_COMMAND, (...args) => this.commands.pickWorkflow(taskArg(args)));
    register('rawko.showApproval', (...args) => this.commands.showApproval(taskArg(args)));
    register('rawko.validateWorkflows', () => this.validate(true));
    register('rawko.restartServer', () => this.client.restart());
    ext.subscriptions.push(
      vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, {
        provideTextDocumentContent: (uri) => this.previews.get(uri.toString()) ?? '',
      }),
      vscode.workspace.onDidSaveTextDocument((doc) => {
        if (/[\\/](workflows|agents)[\\/]/.test(doc.uri.fsPath) && /[\\/]\.(rawko|pi)[\\/]/.test(doc.uri.fsPath)) {
          void this.validate(false);
        }
      }),
      vscode.workspace.onDidChangeConfiguration((change) => {
        if (config.RESTART_SETTINGS.some((key) => change.affectsConfiguration(key))) {
          void vscode.window
            .showInformationMessage('rawko: restart the server to apply the changed settings?', 'Restart Server')
            .then((choice) => choice && this.client.restart());
        }
      }),
    );
    await this.client.start();
  }

  private deliver(note: TaskNotification): void {
    switch (note.kind) {
      case 'status': {
        const before = this.store.get(note.params.taskId)?.state;
        this.store.status(note.params);
        void this.commands.statusArrived(note.params);
        if (note.params.reason) {
          this.formatter.note(note.params.taskId, note.params.reason);
        } else if (before !== note.params.state && note.params.state !== 'running' && !isFinished(note.params.state)) {
          this.formatter.note(note.params.taskId, `${note.params.state.replace(/_/g, ' ')}: ${note.params.text}`);
        }
        break;
      }
      case 'countdown':
        this.store.countdown(note.params);
        break;
      case 'output':
        this.formatter.output(note.params);
        break;
      case 'taskFinished':
        this.store.finished(note.params);
        this.formatter.note(note.params.taskId, `task ${note.params.outcome}: ${note.params.summary}`);
        break;
    }
  }

  /** Fills in a task from `rawko/getTask` (after a gap in `seq`, or for a task started elsewhere). */
  private async refresh(taskId: string): Promise<void> {
    const rpc = this.client.rpc();
    if (!rpc) {
      return;
    }
    try {
      const { task } = await rpc.request(Requests.getTask, { taskId });
      this.store.describe(task);
    } catch {
      // The task is gone; its notifications say all there is.
    }
  }

  private async validate(reveal: boolean): Promise<void> {
    const rpc = this.commands.needServer();
    if (!rpc) {
      return;
    }
    let list: WorkflowDiagnostic[];
    try {
      list = (await rpc.request(Requests.validateWorkflows, {})).diagnostics ?? [];
    } catch (error) {
      void vscode.window.showErrorMessage(`rawko: could not validate the workflows: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    this.diagnostics.clear();
    for (const [file, problems] of groupDiagnostics(list)) {
      this.diagnostics.set(
        vscode.Uri.file(file),
        problems.map((p) => {
          const position = new vscode.Position(p.line, p.column);
          const diagnostic = new vscode.Diagnostic(
            new vscode.Range(position, position.translate(0, 1)),
            p.message,
            p.severity === 'warning' ? vscode.DiagnosticSeverity.Warning : vscode.DiagnosticSeverity.Error,
          );
          diagnostic.source = 'rawko';
          return diagnostic;
        }),
      );
    }
    if (reveal) {
      if (list.length > 0) {
        await vscode.commands.executeCommand('workbench.actions.view.problems');
      }
      const errors = list.filter((d) => d.severity !== 'warning').length;
      void vscode.window.showInformationMessage(
        list.length === 0
          ? 'rawko: every workflow is valid'
          : `rawko: ${errors} error(s) and ${list.length - errors} warning(s) in the workflows (see Problems)`,
      );
    }
  }

  private async openDiff(params: ApproveToolCallParams): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
    const probe = proposeChange(params.tool, params.input, undefined);
    if (!probe) {
      void vscode.window.showInformationMessage(`rawko: ${params.tool} names no file to preview`);
      return;
    }
    const file = path.resolve(folder, probe.path);
    let current: string | undefined;
    try {
      current = await fs.promises.readFile(file, 'utf8');
    } catch {
      current = undefined;
    }
    const proposal = proposeChange(params.tool, params.input, current);
    if (!proposal) {
      return;
    }
    this.previewCount += 1;
    const name = proposal.path.replace(/^\/+/, '');
    const left = vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${name}`, query: `before-${this.previewCount}` });
    const right = vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${name}`, query: `after-${this.previewCount}` });
    this.previews.set(left.toString(), proposal.before);
    this.previews.set(right.toString(), proposal.after);
    const note = proposal.note ? ` (${proposal.note})` : '';
    await vscode.commands.executeCommand('vscode.diff', left, right, `${name}: ${params.tool} proposed by rawko${note}`, {
      preview: true,
      preserveFocus: true,
    });
  }

  async dispose(): Promise<void> {
    this.approvals.dispose();
    await this.client.dispose();
    this.sequencer.reset();
    this.status.dispose();
    this.diagnostics.dispose();
    this.output.dispose();
  }
}
