/**
 * The extension's entry point: builds one context (task store, sequencer, status bar, Rawko view,
 * output, approvals), registers the Rawko commands and starts `rawko serve` as a
 * vscode-languageclient client over stdio with the rawko handlers registered (approvals, workspace
 * trust, the four task notifications into the sequencer). It finds the binary first and says how
 * to install it when it is missing; a server that stops unexpectedly is restarted once with a
 * message, a second stop leaves it stopped. With `rawko.web.listen` set the server also serves the
 * web page of the tasks; its offer to open the page (`window/showMessageRequest`, then
 * `window/showDocument` with `external`) is answered by vscode-languageclient itself, which opens
 * the address in the browser with `env.openExternal`. With `rawko.team.nats` set it also shows the
 * team's tasks (docs/team.md): tasks this editor never started, whose blocked calls are asked
 * like its own.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { ANSWER_WORDS, Approvals } from './approval';
import { Checkpoints, type FileSides } from './checkpoints';
import { systemClock } from './clock';
import { Commands, errorOf, PICK_WORKFLOW_COMMAND, type Rpc } from './commands';
import { groupDiagnostics } from './diagnostics';
import { OutputFormatter } from './output';
import { proposeChange } from './preview';
import {
  Notifications,
  Requests,
  ServerNotifications,
  ServerRequests,
  type ApproveToolCallParams,
  type TaskNotification,
  type WorkflowDiagnostic,
} from './protocol';
import { Sequencer } from './sequencer';
import { CrashPolicy, resolveServerCommand, serveArgs } from './server';
import { StatusBar } from './status';
import { TaskStore } from './tasks';
import { TaskTree } from './tree';
import { askTrust } from './trust';

const PREVIEW_SCHEME = 'rawko-preview';

/** The settings that only a restarted server picks up. */
const RESTART_SETTINGS = ['rawko.server.path', 'rawko.approvalTimeoutSeconds', 'rawko.web.listen', 'rawko.team.nats'];

let context: Context | undefined;

/** A `rawko.*` text setting (package.json), read afresh each time: empty when unset. */
function setting(key: string): string {
  const value = vscode.workspace.getConfiguration('rawko').get<unknown>(key);
  return typeof value === 'string' ? value.trim() : '';
}

/** Shows `message` with a button per action; a click on one runs it. */
function offer(show: typeof vscode.window.showErrorMessage, message: string, actions: Record<string, () => unknown>): void {
  void show(message, ...Object.keys(actions)).then((choice) => choice && actions[choice]?.());
}

/** The settings handed to `rawko serve` in `initialize`; they override its config files. */
function initializationOptions(): Record<string, unknown> {
  const timeout = vscode.workspace.getConfiguration('rawko').get<unknown>('approvalTimeoutSeconds');
  return typeof timeout === 'number' && Number.isFinite(timeout) && timeout > 0 ? { approvalTimeoutSeconds: Math.floor(timeout) } : {};
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

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
  // A subagent's output is headed by its label: `── task-2: reviewer (subagent of task-1) ──`.
  readonly formatter = new OutputFormatter(this.output, (id) => {
    const task = this.store.get(id);
    return task?.subagent?.label || task?.description;
  });
  readonly status = new StatusBar(vscode, systemClock, this.store);
  readonly diagnostics = vscode.languages.createDiagnosticCollection('rawko');
  readonly previews = new Map<string, string>();
  readonly sequencer = new Sequencer(systemClock, (note) => this.deliver(note), (taskId) => void this.refresh(taskId));
  readonly approvals = new Approvals(vscode, systemClock, {
    openDiff: (params) => this.openDiff(params),
    onAnswered: (params, outcome) => this.formatter.note(params.taskId, `${ANSWER_WORDS[outcome]} by you — ${params.summary || params.tool}`),
    onWithdrawn: (params) =>
      this.formatter.note(params.taskId, `the approval of ${params.tool} was withdrawn by rawko (timed out or the task ended)`),
  });
  readonly commands = new Commands(vscode, this.store, this.approvals, {
    rpc: () => this.rpc(),
    settings: () => ({ provider: setting('provider'), model: setting('model'), script: setting('script') }),
    showOutput: (preserveFocus) => this.output.show(preserveFocus),
    note: (taskId, text) => this.formatter.note(taskId, text),
  });
  readonly checkpoints = new Checkpoints(vscode, this.store, {
    rpc: () => this.rpc(),
    openSides: (title, files) => this.openSides(title, files),
    openText: (title, text) => this.openText(title, text),
    note: (taskId, text) => this.formatter.note(taskId, text),
    refresh: (taskId) => this.refresh(taskId, true),
    resume: (taskId) => this.commands.rerun('resume', taskId),
  });
  readonly tree = new TaskTree(vscode, systemClock, this.store, this.approvals, (taskId) => this.wantDetail(taskId));
  /** The connection to `rawko serve`, its log, and whether it may restart after a crash. */
  private client: LanguageClient | undefined;
  private readonly serverLog = vscode.window.createOutputChannel('rawko Server', { log: true });
  private readonly crashes = new CrashPolicy();
  private previewCount = 0;

  constructor(private readonly extension: vscode.ExtensionContext) {}


  async start(): Promise<void> {
    const ext = this.extension;
    // The argument a command may get is the task it is for: its id (from the status bar or a
    // notice) or a row of the Rawko view.
    const taskOf = (arg: unknown): string | undefined => {
      const id = typeof arg === 'object' && arg !== null ? (arg as { taskId?: unknown }).taskId : arg;
      return typeof id === 'string' ? id : undefined;
    };
    const register = (id: string, run: (taskId: string | undefined, arg: unknown, more: unknown) => unknown): void => {
      ext.subscriptions.push(vscode.commands.registerCommand(id, (arg: unknown, more: unknown) => run(taskOf(arg), arg, more)));
    };
    // The view's inline Allow and Deny answer the approval row they are on.
    const answer = (arg: unknown, outcome: 'allow_once' | 'reject_once'): void => {
      const { taskId, toolCallId } = (arg ?? {}) as { taskId?: unknown; toolCallId?: unknown };
      if (typeof taskId !== 'string' || typeof toolCallId !== 'string' || !this.approvals.answer(taskId, toolCallId, outcome)) {
        void vscode.window.showInformationMessage('rawko: that tool call no longer waits for an answer');
      }
    };
    register('rawko.start', () => this.commands.start());
    register('rawko.cancel', (id) => this.commands.cancel(id));
    register('rawko.nextPhase', (id) => this.commands.step('next', id));
    register('rawko.loopPhase', (id) => this.commands.step('loop', id));
    register('rawko.interrupt', (id) => this.commands.interrupt(id));
    register('rawko.resume', (id) => this.commands.rerun('resume', id));
    register('rawko.retry', (id) => this.commands.rerun('retry', id));
    register('rawko.allowApproval', (_, arg) => answer(arg, 'allow_once'));
    register('rawko.denyApproval', (_, arg) => answer(arg, 'reject_once'));
    register('rawko.openPhasePrompt', (id, _, index) => id !== undefined && typeof index === 'number' && this.openPhasePrompt(id, index));
    register('rawko.showPhaseChanges', (_, arg) => this.checkpoints.showChanges(arg));
    register('rawko.rewindToPhase', (_, arg) => this.checkpoints.rewind(arg));
    register('rawko.showOutput', (id) => this.commands.showOutput(id));
    register('rawko.showTasks', () => this.commands.showTasks());
    register(PICK_WORKFLOW_COMMAND, (id) => this.commands.pickWorkflow(id));
    register('rawko.showApproval', (id) => this.commands.showApproval(id));
    register('rawko.validateWorkflows', () => this.validate(true));
    register('rawko.restartServer', () => this.restart());
    ext.subscriptions.push(
      vscode.window.createTreeView('rawko.tasks', { treeDataProvider: this.tree, showCollapseAll: true }),
      vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, {
        provideTextDocumentContent: (uri) => this.previews.get(uri.toString()) ?? '',
      }),
      vscode.workspace.onDidSaveTextDocument((doc) => {
        if (/[\\/](workflows|agents)[\\/]/.test(doc.uri.fsPath) && /[\\/]\.(rawko|pi)[\\/]/.test(doc.uri.fsPath)) {
          void this.validate(false);
        }
      }),
      vscode.workspace.onDidChangeConfiguration((change) => {
        if (RESTART_SETTINGS.some((key) => change.affectsConfiguration(key))) {
          offer(vscode.window.showInformationMessage, 'rawko: restart the server to apply the changed settings?', {
            'Restart Server': () => this.restart(),
          });
        }
      }),
    );
    await this.startServer();
  }

  /** The client while the server runs. */
  private rpc(): Rpc | undefined {
    const client = this.client;
    return client?.isRunning() ? { request: (type, params) => client.sendRequest(type, params) } : undefined;
  }

  private showLog(): void {
    this.serverLog.show(true);
  }

  private async startServer(): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const resolved = resolveServerCommand(setting('server.path'), folder, process.env, isExecutable);
    if ('missing' in resolved) {
      this.status.setServerState('missing');
      this.serverLog.error(resolved.missing);
      offer(vscode.window.showErrorMessage, `rawko: ${resolved.missing}`, {
        'Open Settings': () => vscode.commands.executeCommand('workbench.action.openSettings', 'rawko.server.path'),
      });
      return;
    }
    this.status.setServerState('starting');
    const serverOptions: ServerOptions = {
      command: resolved.command,
      args: serveArgs(setting('web.listen'), setting('team.nats')),
      options: { cwd: folder ?? process.cwd() },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.serverLog,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: initializationOptions(),
      errorHandler: {
        error: (_error, _message, count) =>
          count !== undefined && count <= 3 ? { action: ErrorAction.Continue } : { action: ErrorAction.Shutdown },
        closed: () => {
          this.approvals.dispose();
          if (this.crashes.onCrash() === 'restart') {
            offer(
              vscode.window.showWarningMessage,
              'rawko: the server stopped unexpectedly and was restarted. Interrupted tasks can be resumed with Rawko: Show Tasks.',
              { 'Show Server Log': () => this.showLog() },
            );
            return { action: CloseAction.Restart, handled: true };
          }
          this.status.setServerState('stopped');
          offer(vscode.window.showErrorMessage, 'rawko: the server stopped again and was not restarted.', {
            'Restart Server': () => this.restart(),
            'Show Server Log': () => this.showLog(),
          });
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };
    const client = new LanguageClient('rawko', 'rawko', serverOptions, clientOptions);
    this.client = client;

    client.onRequest(ServerRequests.approveToolCall, (params, token) => {
      // A task not known here yet (a team task on another machine, `rawko.team.nats`) shows
      // with its call, and its description and phases are asked for, as for any new task.
      this.store.asked(params);
      this.wantDetail(params.taskId);
      return this.approvals.ask(params, token);
    });
    client.onRequest(ServerRequests.trustWorkspace, (params) => askTrust(vscode, params));
    client.onNotification(Notifications.status, (params) => this.sequencer.push({ kind: 'status', params }));
    client.onNotification(Notifications.countdown, (params) => this.sequencer.push({ kind: 'countdown', params }));
    client.onNotification(Notifications.output, (params) => this.sequencer.push({ kind: 'output', params }));
    client.onNotification(Notifications.taskFinished, (params) => this.sequencer.push({ kind: 'taskFinished', params }));
    client.onNotification(ServerNotifications.approvalWithdrawn, (params) => this.approvals.withdraw(params.taskId, params.toolCallId));
    client.onDidChangeState((change) => {
      if (this.client !== client) {
        return;
      }
      if (change.newState === State.Running) {
        // A (re)started server: what the extension knew of tasks is stale.
        this.sequencer.reset();
        this.store.clear();
        this.status.setServerState('running');
        void this.listStoredTasks();
      } else if (change.newState === State.Starting) {
        this.status.setServerState('starting');
      }
    });

    try {
      await client.start();
    } catch (error) {
      if (this.client === client) {
        this.status.setServerState('stopped');
        const message = error instanceof Error ? error.message : String(error);
        this.serverLog.error(`rawko serve did not start: ${message}`);
        offer(vscode.window.showErrorMessage, `rawko: the server did not start: ${message}`, { 'Show Server Log': () => this.showLog() });
      }
    }
  }

  private async stopServer(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.approvals.dispose(); // pending approvals are moot
    if (client) {
      // A failed stop or dispose changes nothing: the process is gone either way.
      if (client.state !== State.Stopped) {
        await client.stop(2000).catch(() => undefined);
      }
      await client.dispose().catch(() => undefined);
    }
  }

  /** Rawko: Restart Server: a fresh server, and a fresh allowance of one automatic restart. */
  private async restart(): Promise<void> {
    this.crashes.reset();
    await this.stopServer();
    await this.startServer();
  }

  private deliver(note: TaskNotification): void {
    switch (note.kind) {
      case 'status': {
        const before = this.store.get(note.params.taskId)?.state;
        this.store.status(note.params);
        void this.commands.statusArrived(note.params);
        if (note.params.reason) {
          this.formatter.note(note.params.taskId, note.params.reason);
        } else if (before !== note.params.state && note.params.stateText && note.params.stateClass !== 'finished') {
          this.formatter.note(note.params.taskId, `${note.params.state.replace(/_/g, ' ')}: ${note.params.text}`);
        }
        break;
      }
      case 'countdown':
        this.store.countdown(note.params);
        break;
      case 'output':
        this.store.output(note.params);
        this.formatter.output(note.params);
        break;
      case 'taskFinished':
        this.store.finished(note.params);
        this.formatter.finished(note.params);
        break;
    }
    // A task seen for the first time (started here, by another client or an external agent), or
    // one whose workflow changed: ask the server for its description and phases, once.
    this.wantDetail(note.params.taskId);
  }

  private wantDetail(taskId: string): void {
    if (this.store.claimDetail(taskId)) {
      void this.refresh(taskId);
    }
  }

  /** Shows the tasks of the task store that may go on (interrupted, blocked or failed) in the Rawko view. */
  private async listStoredTasks(): Promise<void> {
    try {
      const tasks = (await this.rpc()?.request(Requests.listTasks, {}))?.tasks ?? [];
      for (const task of tasks.filter((t) => !this.store.get(t.taskId) && (t.stateClass !== 'finished' || t.actions?.includes('retry')))) {
        this.store.describe(task);
      }
    } catch {
      // The view fills from the notifications all the same.
    }
  }

  /** Opens the context prompt rawko injects in a phase of a task, read-only. */
  private async openPhasePrompt(taskId: string, index: number): Promise<void> {
    const rpc = this.commands.needServer();
    if (!rpc) {
      return;
    }
    try {
      const { name, breadcrumbText, prompt } = await rpc.request(Requests.phasePrompt, { taskId, index });
      this.previewCount += 1;
      const uri = vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${taskId}/${name} (context prompt).md`, query: `prompt-${this.previewCount}` });
      this.previews.set(uri.toString(), `<!-- ${breadcrumbText} -->\n\n${prompt}`);
      const doc = await vscode.workspace.openTextDocument(uri);
      await vscode.window.showTextDocument(doc, { preview: true });
    } catch (error) {
      void vscode.window.showErrorMessage(`rawko: could not show the phase's context prompt: ${errorOf(error).message}`);
    }
  }

  /** A read-only document of ours (`rawko-preview:`) holding `text`, at `name` (its extension picks the language). */
  private preview(name: string, text: string, what: string): vscode.Uri {
    this.previewCount += 1;
    const uri = vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${name.replace(/^\/+/, '')}`, query: `${what}-${this.previewCount}` });
    this.previews.set(uri.toString(), text);
    return uri;
  }

  /**
   * Opens what a phase changed in the diff editor: one file in the ordinary one, several in the
   * multi-file diff editor (`vscode.changes`); false when that is not there.
   */
  private async openSides(title: string, files: FileSides[]): Promise<boolean> {
    const pairs = files.map((file) => {
      const name = file.path;
      return [vscode.Uri.file(name), this.preview(name, file.before, 'before'), this.preview(name, file.after, 'after')] as const;
    });
    try {
      const [only] = pairs;
      if (pairs.length === 1 && only) {
        await vscode.commands.executeCommand('vscode.diff', only[1], only[2], `${files[0]?.path ?? ''} — ${title}`, { preview: true });
      } else {
        await vscode.commands.executeCommand('vscode.changes', title, pairs);
      }
      return true;
    } catch {
      return false;
    }
  }

  /** Opens `text` read-only as a unified diff. */
  private async openText(title: string, text: string): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(this.preview(`${title.replace(/[\\/]/g, '-')}.diff`, text, 'diff'));
    await vscode.languages.setTextDocumentLanguage(doc, 'diff');
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  /** Fills in a task from `rawko/getTask` (after a gap in `seq`, or for a task started elsewhere). */
  private async refresh(taskId: string, restate = false): Promise<void> {
    try {
      const answer = await this.rpc()?.request(Requests.getTask, { taskId });
      if (answer) {
        this.store.describe(answer.task, restate);
      }
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
      void vscode.window.showErrorMessage(`rawko: could not validate the workflows: ${errorOf(error).message}`);
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
    const current = await fs.promises.readFile(file, 'utf8').catch(() => undefined); // undefined: a new file
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
    await this.stopServer();
    this.serverLog.dispose();
    this.sequencer.reset();
    this.status.dispose();
    this.tree.dispose();
    this.diagnostics.dispose();
    this.output.dispose();
  }
}
