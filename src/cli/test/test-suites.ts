import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { SessionEvent } from '../../session/format.js';
import { readSession } from '../../session/reader.js';
import { byPosition, type Diagnostic } from '../../workflow/diagnostic.js';
import type { Workflow } from '../../workflow/load.js';
import { loadChecked } from '../load-checked.js';
import type { CheckContext } from './test-expect.js';
import type { TestCase, TestFile } from './expectations.js';
import { loadTestFile } from './test-file.js';
import { expectedNameProblems } from './test-names.js';
import { UsageError } from '../usage-error.js';

/**
 * What `conclave test` runs (docs/testing-workflows.md): the test files its paths name, each with
 * its workflow loaded as `validate` loads it and each case's recording read, or every problem of
 * every file at once, positioned.
 */

/** A test file ready to run: its workflow loaded, each case's recording read. */
export interface Suite {
  test: TestFile;
  workflow: Workflow;
  recordings: Map<TestCase, SessionEvent[]>;
}

const SKIPPED = new Set(['node_modules', '.git', '.conclave']);

/** Every test file and its workflow and recordings, with every problem of every file at once. */
export async function loadSuites(
  files: readonly string[],
  options: { live?: boolean; update?: boolean; only?: (name: string) => boolean },
  root = process.cwd(),
): Promise<{ suites: Suite[]; diagnostics: Diagnostic[] }> {
  const suites: Suite[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const file of files) {
    const { test: whole, diagnostics: found } = loadTestFile(file, root);
    diagnostics.push(...found);
    if (!whole) continue;
    // --case: only the cases named are loaded and run (a file with none of them is left out).
    const test = options.only ? { ...whole, cases: whole.cases.filter((c) => options.only!(c.name)) } : whole;
    if (test.cases.length === 0) continue;
    const checked = await loadChecked(test.workflow);
    const errors = checked.diagnostics.filter((d) => d.severity === 'error');
    const at = { line: 1, col: 1 };
    if (checked.unreadable !== undefined || !checked.workflow) {
      diagnostics.push(...errors, {
        file,
        ...at,
        severity: 'error',
        message: `its workflow ${relative(process.cwd(), test.workflow)} cannot run: ${checked.unreadable ?? 'it has errors'}`,
      });
      continue;
    }
    diagnostics.push(...expectedNameProblems(test, checked.workflow));
    const recordings = new Map<TestCase, SessionEvent[]>();
    for (const testCase of test.cases) {
      const problem = recordingProblem(testCase, checked.workflow, options, recordings, file);
      if (problem) diagnostics.push({ file, line: testCase.at.line, col: testCase.at.col, severity: 'error', message: `case "${testCase.name}": ${problem}` });
    }
    suites.push({ test, workflow: checked.workflow, recordings });
  }
  return { suites, diagnostics: diagnostics.sort(byPosition) };
}

/**
 * Why a case's recording cannot be used: missing (offline, or --update without a place for it),
 * unreadable, or of another workflow; `file` the test file, which the hint's --update takes.
 */
function recordingProblem(
  testCase: TestCase,
  workflow: Workflow,
  options: { live?: boolean; update?: boolean },
  recordings: Map<TestCase, SessionEvent[]>,
  file: string,
): string | undefined {
  if (!testCase.session) return options.live && !options.update ? undefined : 'give session: the file its recording is kept in';
  if (!existsSync(testCase.session))
    return options.live
      ? undefined
      : `its recording ${testCase.sessionText} does not exist: record it with conclave test --live --update ${relative(process.cwd(), file) || file}`;
  let events: SessionEvent[];
  try {
    events = readSession(testCase.session).events;
  } catch (e) {
    return `its recording cannot be read: ${(e as Error).message}`;
  }
  const started = events.find((e) => e.type === 'run_started');
  if (started?.type === 'run_started' && started.workflow !== workflow.spec.name)
    return `its recording ${testCase.sessionText} is a run of the workflow "${started.workflow}", not of "${workflow.spec.name}"`;
  recordings.set(testCase, events);
  return undefined;
}

/** The test files the paths name: files as given, folders searched for *.test.yml (not node_modules, .git or .conclave). */
export function testFiles(paths: readonly string[]): string[] {
  const found: string[] = [];
  for (const path of paths) {
    if (!existsSync(path)) throw new UsageError(`${path} does not exist`);
    if (!statSync(path).isDirectory()) {
      found.push(resolve(path));
      continue;
    }
    const before = found.length;
    walk(resolve(path), found);
    if (found.length === before) throw new UsageError(`no test file (*.test.yml) below ${path}`);
  }
  // Named as a person would type them from here, in messages, annotations and reports.
  return [...new Set(found)].map((file) => relative(process.cwd(), file) || file);
}

function walk(dir: string, found: string[]): void {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (SKIPPED.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path, found);
    else if (entry.isFile() && /\.test\.ya?ml$/.test(entry.name)) found.push(path);
  }
}

/** What a case's run is checked against beside its own events: its recording, and the files its workflow's documents are written to. */
export function checkContextOf(suite: Suite, testCase: TestCase): CheckContext {
  return {
    recording: suite.recordings.get(testCase) ?? [],
    ...(testCase.session ? { recordingFile: testCase.session } : {}),
    workflow: suite.workflow,
    documentFiles: documentFilesOf(suite.workflow),
  };
}

/** Each document's `write_to`, by the document's name. */
export function documentFilesOf(workflow: Workflow): Record<string, string> {
  return Object.fromEntries(Object.entries(workflow.spec.documents ?? {}).flatMap(([name, d]) => (d.write_to ? [[name, d.write_to] as [string, string]] : [])));
}
