/**
 * A typed fake of the part of the VS Code API the extension's logic uses (`Vs`), for the unit
 * tests: status bar items and quick picks are objects the test can read and drive, messages are
 * recorded and answered from a script, and a manual clock stands in for timers.
 */
import type * as vscode from 'vscode';
import type { Clock, Timer } from '../../src/clock';
import type { Vs } from '../../src/vs';

class Emitter<T> {
  private listeners: ((value: T) => unknown)[] = [];
  readonly event: vscode.Event<T> = (listener: (value: T) => unknown) => {
    this.listeners.push(listener);
    return {
      dispose: () => {
        this.listeners = this.listeners.filter((l) => l !== listener);
      },
    };
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) {
      listener(value);
    }
  }
}

export class FakeThemeColor implements vscode.ThemeColor {
  constructor(readonly id: string) {}
}

export class FakeMarkdownString implements vscode.MarkdownString {
  isTrusted?: boolean;
  supportHtml?: boolean;
  baseUri?: vscode.Uri;
  constructor(
    public value = '',
    public supportThemeIcons?: boolean,
  ) {}
  appendText(value: string): vscode.MarkdownString {
    this.value += value.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
    return this;
  }
  appendMarkdown(value: string): vscode.MarkdownString {
    this.value += value;
    return this;
  }
  appendCodeblock(value: string, language = ''): vscode.MarkdownString {
    this.value += `\n\`\`\`${language}\n${value}\n\`\`\`\n`;
    return this;
  }
  /** The text without Markdown escapes, for assertions. */
  plain(): string {
    return this.value.replace(/\\(.)/g, '$1');
  }
}

export class FakeStatusBarItem implements vscode.StatusBarItem {
  name: string | undefined;
  text = '';
  tooltip: string | vscode.MarkdownString | undefined;
  color: string | vscode.ThemeColor | undefined;
  backgroundColor: vscode.ThemeColor | undefined;
  command: string | vscode.Command | undefined;
  accessibilityInformation: vscode.AccessibilityInformation | undefined;
  visible = false;
  disposed = false;
  constructor(
    readonly id: string,
    readonly alignment: vscode.StatusBarAlignment,
    readonly priority: number | undefined,
  ) {}
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {
    this.disposed = true;
    this.visible = false;
  }
  /** The tooltip as plain text. */
  tooltipText(): string {
    if (this.tooltip instanceof FakeMarkdownString) {
      return this.tooltip.plain();
    }
    return typeof this.tooltip === 'string' ? this.tooltip : '';
  }
  commandId(): string | undefined {
    return typeof this.command === 'string' ? this.command : this.command?.command;
  }
  commandArgs(): unknown[] {
    return typeof this.command === 'object' ? (this.command.arguments ?? []) : [];
  }
  backgroundId(): string | undefined {
    return (this.backgroundColor as FakeThemeColor | undefined)?.id;
  }
}

export class FakeQuickPick<T extends vscode.QuickPickItem> implements vscode.QuickPick<T> {
  value = '';
  placeholder: string | undefined;
  /** The line under the input (VS Code 1.108 and later). */
  prompt: string | undefined;
  buttons: readonly vscode.QuickInputButton[] = [];
  items: readonly T[] = [];
  canSelectMany = false;
  matchOnDescription = false;
  matchOnDetail = false;
  keepScrollPosition?: boolean;
  activeItems: readonly T[] = [];
  selectedItems: readonly T[] = [];
  title: string | undefined;
  step: number | undefined;
  totalSteps: number | undefined;
  enabled = true;
  busy = false;
  ignoreFocusOut = false;
  visible = false;
  disposed = false;

  private readonly changeValue = new Emitter<string>();
  private readonly accept = new Emitter<undefined>();
  private readonly triggerButton = new Emitter<vscode.QuickInputButton>();
  private readonly triggerItemButton = new Emitter<vscode.QuickPickItemButtonEvent<T>>();
  private readonly changeActive = new Emitter<readonly T[]>();
  private readonly changeSelection = new Emitter<readonly T[]>();
  private readonly hideEmitter = new Emitter<undefined>();

  readonly onDidChangeValue = this.changeValue.event;
  readonly onDidAccept = this.accept.event;
  readonly onDidTriggerButton = this.triggerButton.event;
  readonly onDidTriggerItemButton = this.triggerItemButton.event;
  readonly onDidChangeActive = this.changeActive.event;
  readonly onDidChangeSelection = this.changeSelection.event;
  readonly onDidHide = this.hideEmitter.event;

  show(): void {
    if (!this.disposed) {
      this.visible = true;
    }
  }
  hide(): void {
    if (this.visible) {
      this.visible = false;
      this.hideEmitter.fire(undefined);
    }
  }
  dispose(): void {
    this.hide();
    this.disposed = true;
  }

  /** The user picks the item whose label contains `label` and presses Enter. */
  pick(label: string): void {
    const item = this.items.find((i) => i.label.includes(label));
    if (!item) {
      throw new Error(`no item "${label}" in ${this.items.map((i) => i.label).join(', ')}`);
    }
    if (!this.visible) {
      throw new Error(`the quick pick "${this.title ?? ''}" is not visible`);
    }
    this.activeItems = [item];
    this.selectedItems = [item];
    this.changeSelection.fire(this.selectedItems);
    this.accept.fire(undefined);
  }

  /** The user presses Enter without picking: what is active, if anything, is accepted. */
  enter(): void {
    this.selectedItems = this.activeItems;
    this.accept.fire(undefined);
  }

  labels(): string[] {
    return this.items.map((i) => i.label);
  }
}

export interface MessageCall {
  severity: 'information' | 'warning' | 'error';
  message: string;
  options?: vscode.MessageOptions;
  items: string[];
}

/** Answers for the next prompts, in order; `undefined` dismisses one. */
export interface Script {
  messages: (string | undefined)[];
  inputs: (string | undefined)[];
  /** For each `showQuickPick`: the label (substring) of the item to pick, or undefined. */
  picks: (string | undefined)[];
}

export class FakeVs implements Vs {
  version = '1.139.1';
  readonly statusBarItems: FakeStatusBarItem[] = [];
  readonly quickPicks: FakeQuickPick<vscode.QuickPickItem>[] = [];
  readonly messages: MessageCall[] = [];
  readonly executed: { command: string; args: unknown[] }[] = [];
  /** The items each `showQuickPick` offered, with its options. */
  readonly shownPicks: { items: vscode.QuickPickItem[]; options?: vscode.QuickPickOptions }[] = [];
  readonly inputBoxes: vscode.InputBoxOptions[] = [];
  readonly script: Script = { messages: [], inputs: [], picks: [] };

  private message(severity: MessageCall['severity']) {
    return (message: string, ...rest: unknown[]): Promise<unknown> => {
      let options: vscode.MessageOptions | undefined;
      if (rest.length > 0 && typeof rest[0] === 'object' && rest[0] !== null && !('title' in rest[0])) {
        options = rest.shift() as vscode.MessageOptions;
      }
      const items = rest.map((r) => (typeof r === 'string' ? r : (r as vscode.MessageItem).title));
      this.messages.push({ severity, message, options, items });
      // Only prompts with choices consume a scripted answer.
      const answer = items.length > 0 ? this.script.messages.shift() : undefined;
      return Promise.resolve(answer);
    };
  }

  readonly window: Vs['window'] = {
    createStatusBarItem: ((...args: unknown[]) => {
      const [id, alignment, priority] =
        typeof args[0] === 'string'
          ? (args as [string, vscode.StatusBarAlignment, number | undefined])
          : ['', args[0] as vscode.StatusBarAlignment, args[1] as number | undefined];
      const item = new FakeStatusBarItem(id, alignment, priority);
      this.statusBarItems.push(item);
      return item;
    }),
    createQuickPick: (<T extends vscode.QuickPickItem>() => {
      const pick = new FakeQuickPick<T>();
      this.quickPicks.push(pick as unknown as FakeQuickPick<vscode.QuickPickItem>);
      return pick;
    }),
    showInformationMessage: this.message('information'),
    showWarningMessage: this.message('warning'),
    showErrorMessage: this.message('error'),
    showInputBox: ((options?: vscode.InputBoxOptions) => {
      this.inputBoxes.push(options ?? {});
      const value = this.script.inputs.shift();
      if (value !== undefined && options?.validateInput) {
        const problem = options.validateInput(value);
        if (problem) {
          throw new Error(`the input "${value}" was refused: ${JSON.stringify(problem)}`);
        }
      }
      return Promise.resolve(value);
    }),
    showQuickPick: ((items: readonly vscode.QuickPickItem[] | Thenable<readonly vscode.QuickPickItem[]>, options?: vscode.QuickPickOptions) =>
      Promise.resolve(items).then((list) => {
        this.shownPicks.push({ items: [...list], options });
        const label = this.script.picks.shift();
        if (label === undefined) {
          return undefined;
        }
        const item = list.find((i) => i.label.includes(label));
        if (!item) {
          throw new Error(`no item "${label}" among ${list.map((i) => i.label).join(', ')}`);
        }
        return item;
      })) as unknown as Vs['window']['showQuickPick'],
  };

  readonly commands: Vs['commands'] = {
    executeCommand: (<T>(command: string, ...args: unknown[]) => {
      this.executed.push({ command, args });
      return Promise.resolve(undefined as T);
    }) as Vs['commands']['executeCommand'],
  };

  readonly StatusBarAlignment = { Left: 1, Right: 2 } as unknown as typeof vscode.StatusBarAlignment;
  readonly QuickPickItemKind = { Separator: -1, Default: 0 } as unknown as typeof vscode.QuickPickItemKind;
  readonly ThemeColor = FakeThemeColor as unknown as typeof vscode.ThemeColor;
  readonly MarkdownString = FakeMarkdownString as unknown as typeof vscode.MarkdownString;

  /** The quick pick shown now, if any. */
  visiblePick(): FakeQuickPick<vscode.QuickPickItem> | undefined {
    return this.quickPicks.find((p) => p.visible);
  }
}

interface Scheduled {
  id: number;
  at: number;
  every?: number;
  callback: () => void;
  cancelled: boolean;
}

/**
 * A clock the test moves by hand. Timers run in time order; a timer cancelled from inside a
 * callback (its own included) never runs again.
 */
export class ManualClock implements Clock {
  private time: number;
  private nextId = 1;
  private timers: Scheduled[] = [];

  constructor(start = 1_767_225_600_000) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(callback: () => void, ms: number): Timer {
    return this.schedule(callback, ms, undefined);
  }

  setInterval(callback: () => void, ms: number): Timer {
    return this.schedule(callback, ms, Math.max(1, ms));
  }

  /** Moves time forward by `ms`, running every timer that comes due on the way. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = this.timers
        .filter((t) => !t.cancelled && t.at <= end)
        .sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) {
        break;
      }
      this.time = due.at;
      if (due.every === undefined) {
        due.cancelled = true;
      } else {
        due.at += due.every;
      }
      due.callback();
    }
    this.time = end;
    this.timers = this.timers.filter((t) => !t.cancelled);
  }

  /** How many timers are still pending. */
  pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  private schedule(callback: () => void, ms: number, every: number | undefined): Timer {
    const timer: Scheduled = { id: this.nextId++, at: this.time + Math.max(0, ms), every, callback, cancelled: false };
    this.timers.push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
      },
    };
  }
}

/** The classes the Rawko view builds its rows from (`TreeVs`), as plain records. */
export class FakeTreeItem {
  id?: string;
  description?: string | boolean;
  tooltip?: string;
  contextValue?: string;
  command?: vscode.Command;
  iconPath?: { id: string; color?: { id: string } };
  constructor(
    readonly label: string,
    readonly collapsibleState: number,
  ) {}
}

export const fakeTreeVs = {
  TreeItem: FakeTreeItem,
  ThemeIcon: class {
    constructor(
      readonly id: string,
      readonly color?: FakeThemeColor,
    ) {}
  },
  ThemeColor: FakeThemeColor,
  EventEmitter: class<T> extends Emitter<T> {
    dispose(): void {}
  },
  TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
} as unknown as import('../../src/tree').TreeVs;
