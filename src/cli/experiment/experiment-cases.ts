import { existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { formatDiagnostic } from '../../workflow/diagnostic.js';
import type { Workflow } from '../../workflow/load.js';
import { loadChecked } from '../load-checked.js';
import { UsageError } from '../usage-error.js';
import type { TestCase, TestFile } from '../test/expectations.js';
import type { CheckContext } from '../test/test-expect.js';
import { documentFilesOf, loadSuites } from '../test/test-suites.js';
import type { ExperimentCase, VersionName } from './experiment-verdict.js';

/**
 * An experiment's cases, read from the head's copy of the test files (the base runs the same
 * inputs and expectations), each with the workflow of both versions and where each version's runs
 * work: the case's `workspace:` (or the folder the experiment started in) in that version's files.
 */
export interface LoadedCase {
  entry: ExperimentCase;
  testCase: TestCase;
  /** The test file as each version runs it: its workflow in that version's files. */
  test: Record<VersionName, TestFile>;
  workflow: Record<VersionName, Workflow>;
  workspace: Record<VersionName, string>;
}

export interface VersionRoots {
  base: string;
  head: string;
  /** The folder the experiment was started in, relative to the repository's top. */
  cwd: string;
}

export async function loadExperimentCases(testFiles: readonly string[], given: VersionRoots): Promise<LoadedCase[]> {
  // Absolute: each run works in a copy elsewhere.
  const roots = { base: resolve(given.base), head: resolve(given.head), cwd: given.cwd };
  const headCwd = join(roots.head, roots.cwd);
  const { suites, diagnostics } = await loadSuites(
    testFiles.map((f) => join(roots.head, f)),
    { live: true },
    headCwd,
  );
  if (diagnostics.length > 0) {
    for (const d of diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
    throw new UsageError('a test file is invalid (listed above); nothing was run');
  }
  const inBase = (path: string) => join(roots.base, relative(roots.head, path));
  const loaded: LoadedCase[] = [];
  for (const suite of suites) {
    const file = relative(roots.head, suite.test.file.startsWith('/') ? suite.test.file : join(process.cwd(), suite.test.file));
    const baseWorkflow = await baseWorkflowOf(inBase(suite.test.workflow), relative(roots.head, suite.test.workflow));
    for (const testCase of suite.test.cases) {
      const headWorkspace = testCase.workspace ?? headCwd;
      loaded.push({
        entry: { file, name: testCase.name },
        testCase,
        test: { head: suite.test, base: { ...suite.test, workflow: inBase(suite.test.workflow) } },
        workflow: { head: suite.workflow, base: baseWorkflow },
        workspace: { head: headWorkspace, base: inBase(headWorkspace) },
      });
    }
  }
  return loaded;
}

async function baseWorkflowOf(path: string, named: string): Promise<Workflow> {
  if (!existsSync(path)) throw new UsageError(`${named} is not in the base: an experiment compares a workflow with its earlier version`);
  const checked = await loadChecked(path);
  if (checked.unreadable !== undefined || !checked.workflow) {
    for (const d of checked.diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
    throw new UsageError(`${named} cannot run in the base: ${checked.unreadable ?? 'it has errors (listed above)'}`);
  }
  return checked.workflow;
}

/** What a version's run is checked against: no recording (the runs are live), the version's documents' files. */
export function contextOf(workflow: Workflow): CheckContext {
  return { recording: [], workflow, documentFiles: documentFilesOf(workflow) };
}
