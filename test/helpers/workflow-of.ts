import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadWorkflow, type Workflow } from '../../src/workflow/load.js';

/** A workflow from its text, loaded as `conclave run` loads it (from a file of its own); throws its diagnostics when it does not load. */
export async function workflowOf(text: string): Promise<Workflow> {
  const file = join(mkdtempSync(join(tmpdir(), 'conclave-workflow-')), 'workflow.yml');
  writeFileSync(file, text);
  const { workflow, diagnostics } = await loadWorkflow(file);
  if (!workflow) throw new Error(diagnostics.map((d) => d.message).join('\n'));
  return workflow;
}
