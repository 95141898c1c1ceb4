/**
 * `rawko/validateWorkflows` answers as problems per file: 1-based lines and columns become
 * 0-based positions, a problem without a line is put on the first line.
 */
import type { WorkflowDiagnostic } from './protocol';

export interface Problem {
  line: number;
  column: number;
  severity: 'error' | 'warning';
  message: string;
}

export function groupDiagnostics(list: WorkflowDiagnostic[]): Map<string, Problem[]> {
  const byFile = new Map<string, Problem[]>();
  for (const d of list) {
    const problems = byFile.get(d.path) ?? [];
    problems.push({
      line: Math.max(0, (d.line ?? 1) - 1),
      column: Math.max(0, (d.column ?? 1) - 1),
      severity: d.severity === 'warning' ? 'warning' : 'error',
      message: d.workflow ? `${d.message} (workflow ${d.workflow})` : d.message,
    });
    byFile.set(d.path, problems);
  }
  return byFile;
}
