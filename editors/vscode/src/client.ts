/**
 * The connection to `rawko serve`: a vscode-languageclient client over stdio with the rawko
 * handlers registered (approvals, workspace trust, the four task notifications into the
 * sequencer). It finds the binary first and says how to install it when it is missing; a server
 * that stops unexpectedly is restarted once with a message, a second stop leaves it stopped.
 */
import * as fs from 'node:fs';
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
import type { Approvals } from './approval';
import type { Rpc } from './commands';
import * as config from './config';
import { Notifications, ServerRequests, type TaskNotification } from './protocol';
import { CrashPolicy, resolveServerCommand } from './server';
import type { ServerState } from './status';
import { askTrust } from './trust';

export interface ClientEvents {
  notification(note: TaskNotification): void;
  serverState(state: ServerState): void;
  /** The server (re)started: what the extension knew of tasks is stale. */
  started(): void;
  /** The server went away: pending approvals are moot. */
  stopped(): void;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export class RawkoClient {
  private client: LanguageClient | undefined;
  private readonly policy = new CrashPolicy();
  private readonly serverLog: vscode.LogOutputChannel;

  constructor(
    private readonly approvals: Approvals,
    private readonly events: ClientEvents,
  ) {
    this.serverLog = vscode.window.createOutputChannel('rawko Server', { log: true });
  }

  /** The client while the server runs. */
  rpc(): Rpc | undefined {
    const client = this.client;
    if (!client || client.state !== State.Running) {
      return undefined;
    }
    return { request: (type, params) => client.sendRequest(type, params) };
  }

  showLog(): void {
    this.serverLog.show(true);
  }

  async start(): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const resolved = resolveServerCommand(config.serverPath(), folder, process.env, isExecutable);
    if ('missing' in resolved) {
      this.events.serverState('missing');
      this.serverLog.error(resolved.missing);
      void vscode.window.showErrorMessage(`rawko: ${resolved.missing}`, 'Open Settings').then((choice) => {
        if (choice === 'Open Settings') {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'rawko.server.path');
        }
      });
      return;
    }
    this.events.serverState('starting');
    const serverOptions: ServerOptions = {
      command: resolved.command,
      args: ['serve'],
      options: { cwd: folder ?? process.cwd() },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.serverLog,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: config.initializationOptions(),
      errorHandler: {
        error: (_error, _message, count) =>
          count !== undefined && count <= 3 ? { action: ErrorAction.Continue } : { action: ErrorAction.Shutdown },
        closed: () => {
          this.events.stopped();
          if (this.policy.onCrash() === 'restart') {
            void vscode.window
              .showWarningMessage(
                'rawko: the server stopped unexpectedly and was restarted. Interrupted tasks can be resumed with Rawko: Show Tasks.',
                'Show Server Log',
              )
              .then((choice) => choice && this.showLog());
            return { action: CloseAction.Restart, handled: true };
          }
          this.events.serverState('stopped');
          void vscode.window
            .showErrorMessage('rawko: the server stopped again and was not restarted.', 'Restart Server', 'Show Server Log')
            .then((choice) => {
              if (choice === 'Restart Server') {
                void vscode.commands.executeCommand('rawko.restartServer');
              } else if (choice === 'Show Server Log') {
                this.showLog();
              }
            });
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };
    const client = new LanguageClient('rawko', 'rawko', serverOptions, clientOptions);
    this.client = client;

    client.onRequest(ServerRequests.approveToolCall, (params, token) => this.approvals.ask(params, token));
    client.onRequest(ServerRequests.trustWorkspace, (params) => askTrust(vscode, params));
    client.onNotification(Notifications.status, (params) => this.events.notification({ kind: 'status', params }));
    client.onNotification(Notifications.countdown, (params) => this.events.notification({ kind: 'countdown', params }));
    client.onNotification(Notifications.output, (params) => this.events.notification({ kind: 'output', params }));
    client.onNotification(Notifications.taskFinished, (params) => this.events.notification({ kind: 'taskFinished', params }));
    client.onDidChangeState((change) => {
      if (this.client !== client) {
        return;
      }
      if (change.newState === State.Running) {
        this.events.started();
        this.events.serverState('running');
      } else if (change.newState === State.Starting) {
        this.events.serverState('starting');
      }
    });

    try {
      await client.start();
    } catch (error) {
      if (this.client === client) {
        this.events.serverState('stopped');
        const message = error instanceof Error ? error.message : String(error);
        this.serverLog.error(`rawko serve did not start: ${message}`);
        void vscode.window
          .showErrorMessage(`rawko: the server did not start: ${message}`, 'Show Server Log')
          .then((choice) => choice && this.showLog());
      }
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.events.stopped();
    if (client) {
      // A failed stop or dispose changes nothing: the process is gone either way.
      if (client.state !== State.Stopped) {
        await client.stop(2000).catch(() => undefined);
      }
      await client.dispose().catch(() => undefined);
    }
  }

  /** Rawko: Restart Server: a fresh server, and a fresh allowance of one automatic restart. */
  async restart(): Promise<void> {
    this.policy.reset();
    await this.stop();
    await this.start();
  }

  async dispose(): Promise<void> {
    await this.stop();
    this.serverLog.dispose();
  }
}
