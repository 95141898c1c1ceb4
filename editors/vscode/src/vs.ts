/**
 * The part of the VS Code API that the extension's logic (status bar, approvals, output, tasks,
 * commands) uses, as one type. `extension.ts` passes the real `vscode` module; the unit tests pass
 * a typed fake (`test/unit/fake-vscode.ts`). Modules that take a `Vs` import `vscode` for types
 * only, so they load under plain node.
 */
import type * as vscode from 'vscode';

export interface Vs {
  /** The editor's version, e.g. `1.108.0`. */
  version: string;
  window: Pick<
    typeof vscode.window,
    | 'createStatusBarItem'
    | 'createQuickPick'
    | 'showInformationMessage'
    | 'showWarningMessage'
    | 'showErrorMessage'
    | 'showInputBox'
    | 'showQuickPick'
  >;
  commands: Pick<typeof vscode.commands, 'executeCommand'>;
  StatusBarAlignment: typeof vscode.StatusBarAlignment;
  ThemeColor: typeof vscode.ThemeColor;
  MarkdownString: typeof vscode.MarkdownString;
  QuickPickItemKind: typeof vscode.QuickPickItemKind;
}
