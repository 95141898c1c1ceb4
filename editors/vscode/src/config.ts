/**
 * Typed getters for the extension's settings (`rawko.*` in package.json). Read afresh each time,
 * so a changed setting applies to the next task without a reload.
 */
import * as vscode from 'vscode';
import type { StartSettings } from './commands';

function section(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration('rawko');
}

function text(key: string): string {
  const value = section().get<unknown>(key);
  return typeof value === 'string' ? value.trim() : '';
}

export function serverPath(): string {
  return text('server.path');
}

/** The provider, model and script new tasks are started with; empty means the server's default. */
export function startSettings(): StartSettings {
  return { provider: text('provider'), model: text('model'), script: text('script') };
}

/** The settings handed to `rawko serve` in `initialize`; they override its config files. */
export function initializationOptions(): Record<string, unknown> {
  const timeout = section().get<unknown>('approvalTimeoutSeconds');
  return typeof timeout === 'number' && Number.isFinite(timeout) && timeout > 0
    ? { approvalTimeoutSeconds: Math.floor(timeout) }
    : {};
}

/** The settings that only a restarted server picks up. */
export const RESTART_SETTINGS = ['rawko.server.path', 'rawko.approvalTimeoutSeconds'];
