/**
 * What a blocked Write or Edit would do to its file, as the two sides of a diff. Pure: the
 * file's current text comes in (undefined when it does not exist).
 */

export interface Proposal {
  /** The workspace-relative (or absolute) path the tool names. */
  path: string;
  before: string;
  after: string;
  /** Said in the diff's title when the preview is not the whole file. */
  note?: string;
}

/** The first of `names` that is a string field of `input`. */
function str(input: unknown, ...names: string[]): string | undefined {
  const record = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  return names.map((name) => record[name]).find((value) => typeof value === 'string');
}

export function proposeChange(tool: string, input: unknown, current: string | undefined): Proposal | undefined {
  const path = str(input, 'path', 'file_path');
  if (path === undefined) {
    return undefined;
  }
  if (tool === 'Write') {
    return { path, before: current ?? '', after: str(input, 'content') ?? '', note: current === undefined ? 'new file' : undefined };
  }
  if (tool === 'Edit') {
    const oldText = str(input, 'old_text', 'old_string') ?? '';
    const newText = str(input, 'new_text', 'new_string') ?? '';
    if (current !== undefined && oldText !== '' && current.includes(oldText)) {
      return { path, before: current, after: current.replace(oldText, () => newText) };
    }
    return { path, before: oldText, after: newText, note: 'the replaced text only' };
  }
  return undefined;
}
