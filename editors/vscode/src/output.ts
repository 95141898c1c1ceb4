/**
 * The task output channel: `rawko/output` (already in `seq` order) as readable text. The agent's
 * text streams as it comes; tool calls and results, reminders, hook output, completions and
 * errors each get a line of their own with a marker; a handoff to another agent is a separator
 * line naming it; the phase context rawko injects is collapsed to one line; a kind this version
 * does not know is shown with its name. rawko's Markdown messages (completions, the task's end,
 * step results) are shown without their markup. When notifications of another task come in
 * between, a header line says whose they are. Nothing here throws on odd input: a missing text is
 * an empty one.
 */
import removeMarkdown from 'remove-markdown';
import type { OutputParams, TaskFinishedParams } from './protocol';

/** The part of `vscode.OutputChannel` the formatter writes to. */
export interface Sink {
  append(text: string): void;
}

/** How many lines of a tool result are shown before the rest is summarised. */
export const RESULT_LINES = 12;

/** The line start of the kinds that are one marked line of text. */
const MARKERS = new Map(Object.entries({ reminder: '↻ reminder: ', hook_output: '⚓ hook: ', error: '✗ error: ' }));

/** Markdown as the plain text a reader sees: no `**`, backticks, `#` or link targets; list markers stay. */
export function plainText(markdown: string): string {
  return removeMarkdown(markdown, { stripListLeaders: false, useImgAltText: true }).trim();
}

/** `plainText` of `markdown`, its later lines indented under the first (blank ones dropped). */
function plainBlock(markdown: string): string {
  return plainText(markdown).replace(/\n\s*/g, '\n  ');
}

/** How a task's end is marked. */
const OUTCOME_MARKERS = new Map(Object.entries({ complete: '🏁', failed: '✗', cancelled: '⊘' }));

/** The first line that is not blank, trimmed. */
export function firstLine(text: string): string {
  return (text.split('\n').find((l) => l.trim() !== '') ?? '').trim();
}

function clip(text: string, lines: number): string {
  const all = text.replace(/\n+$/, '').split('\n');
  if (all.length <= lines) {
    return all.join('\n');
  }
  return [...all.slice(0, lines), `… (${all.length - lines} more lines)`].join('\n');
}

export class OutputFormatter {
  private lastTask: string | undefined;
  /** Whether the channel's last character is a newline (or nothing was written). */
  private atLineStart = true;

  constructor(
    private readonly sink: Sink,
    private readonly describe: (taskId: string) => string | undefined = () => undefined,
  ) {}

  /** One `rawko/output` notification. */
  output(params: OutputParams): void {
    const text = typeof params.text === 'string' ? params.text : '';
    this.header(params.taskId);
    switch (params.kind) {
      case 'assistant_delta':
        this.write(text);
        return;
      case 'tool_call':
        this.line(`▶ ${text || params.tool || 'tool call'}`);
        return;
      case 'tool_result': {
        const marker = params.isError ? '✗' : '✓';
        const body = clip(text, RESULT_LINES);
        const name = params.tool ? `${params.tool}: ` : '';
        if (body.includes('\n')) {
          this.line(`  ${marker} ${name}`);
          this.line(body.replace(/^/gm, '    ')); // indented
        } else {
          this.line(`  ${marker} ${name}${body}`);
        }
        return;
      }
      case 'completion':
        this.line(`🏁 ${plainBlock(text)}`);
        return;
      case 'handoff':
        this.line(text || `── handoff to ${params.agent ?? 'another agent'} ──`);
        return;
      case 'context_injected': {
        const lines = text.split('\n').length;
        this.line(`⟪ context injected: ${firstLine(text)} (${lines} line${lines === 1 ? '' : 's'}) ⟫`);
        return;
      }
      default:
        this.line(`${MARKERS.get(params.kind) ?? `[${String(params.kind)}] `}${text}`);
    }
  }

  /** The task's end (`rawko/taskFinished`): its outcome and summary. */
  finished(params: TaskFinishedParams): void {
    this.header(params.taskId);
    const marker = OUTCOME_MARKERS.get(params.outcome) ?? '·';
    const summary = plainBlock(typeof params.summary === 'string' ? params.summary : '');
    this.line(`${marker} task ${params.outcome}${summary ? `: ${summary}` : ''}`);
  }

  /** A line of the extension's own about a task (a state change, an answer, a withdrawal). */
  note(taskId: string | undefined, text: string): void {
    if (taskId !== undefined) {
      this.header(taskId);
    }
    this.line(`· ${text}`);
  }

  /** Writes `text` on a line of its own. */
  private line(text: string): void {
    if (!this.atLineStart) {
      this.write('\n');
    }
    this.write(`${text}\n`);
  }

  private header(taskId: string): void {
    if (this.lastTask === taskId) {
      return;
    }
    this.lastTask = taskId;
    const description = this.describe(taskId);
    this.line(`── ${taskId}${description ? `: ${description}` : ''} ──`);
  }

  private write(text: string): void {
    if (text === '') {
      return;
    }
    this.sink.append(text);
    this.atLineStart = text.endsWith('\n');
  }
}
