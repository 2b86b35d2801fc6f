export type Severity = 'error' | 'warning';

export interface Position {
  line: number;
  col: number;
}

/** One problem in a workflow file, at a 1-based line and column. */
export interface Diagnostic extends Position {
  file: string;
  severity: Severity;
  message: string;
}

export function formatDiagnostic(d: Diagnostic): string {
  const kind = d.severity === 'warning' ? 'warning: ' : '';
  return `${d.file}:${d.line}:${d.col}: ${kind}${d.message}`;
}

export function byPosition(a: Diagnostic, b: Diagnostic): number {
  return a.file.localeCompare(b.file) || a.line - b.line || a.col - b.col;
}

export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === 'error');
}
