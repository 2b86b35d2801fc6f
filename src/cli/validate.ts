import { formatDiagnostic, hasErrors } from '../workflow/diagnostic.js';
import { EXIT } from '../exit-codes.js';
import { annotation, inGitHubActions } from './github/github.js';
import { printableJson, writeCommand } from './command-guard.js';
import { loadChecked } from './load-checked.js';
import { isProviderName, PROVIDERS } from '../provider/clouds.js';
import { UsageError } from './usage-error.js';

const isTestFile = (file: string) => /\.test\.ya?ml$/.test(file);

/** `conclave validate FILE…`: every file is checked and every problem listed; with --connect, its MCP servers started and their tools checked. */
export async function validateCommand(
  files: readonly string[],
  options: { json?: boolean; connect?: boolean; input?: string[]; provider?: string },
): Promise<number> {
  // --provider as run and resume take it: what a run with it would refuse (batch: true on a cloud).
  const { provider } = options;
  if (provider !== undefined && !isProviderName(provider)) throw new UsageError(`--provider must be one of ${PROVIDERS.join(', ')}, not "${provider}"`);
  // A test file (*.test.yml) is checked as `conclave test` reads it: its cases, its workflow, its recordings.
  const tests = files.some(isTestFile) ? await import('./test/test-suites.js') : undefined;
  const results = [];
  for (const file of files) {
    results.push(tests && isTestFile(file) ? { file, diagnostics: (await tests.loadSuites([file], {})).diagnostics } : await loadChecked(file, provider));
  }
  if (options.connect) {
    const { connectProblems } = await import('./mcp-connect.js');
    for (const r of results) {
      if (!r.workflow || hasErrors(r.diagnostics)) continue;
      r.diagnostics.push(...(await connectProblems(r.workflow, options.input ?? [])));
    }
  }
  const failed = results.filter((r) => r.unreadable !== undefined || hasErrors(r.diagnostics));
  if (options.json) {
    const report = results.map((r) => ({
      file: r.file,
      ok: r.unreadable === undefined && !hasErrors(r.diagnostics),
      ...(r.unreadable !== undefined ? { error: r.unreadable } : {}),
      diagnostics: r.diagnostics.map(({ line, col, severity, message, file }) => ({ file, line, col, severity, message })),
    }));
    process.stdout.write(`${printableJson({ ok: failed.length === 0, files: report })}\n`);
  } else {
    if (inGitHubActions()) for (const r of results) for (const d of r.diagnostics) writeCommand(process.stdout, annotation(d));
    for (const r of results) {
      if (r.unreadable !== undefined) process.stdout.write(`conclave: ${r.unreadable}\n`);
      for (const d of r.diagnostics) process.stdout.write(`${formatDiagnostic(d)}\n`);
      if (!failed.includes(r)) process.stdout.write(`${r.file}: ok\n`);
    }
    if (files.length > 1) {
      process.stdout.write(`${files.length} files: ${files.length - failed.length} valid, ${failed.length} with errors\n`);
    }
  }
  return failed.length > 0 ? EXIT.usage : EXIT.ok;
}
