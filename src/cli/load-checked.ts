import { mentionWarnings } from '../channel/mention-lint.js';
import { byPosition, type Diagnostic } from '../workflow/diagnostic.js';
import { loadWorkflow, WorkflowFileError, type Workflow } from '../workflow/load.js';

export interface CheckedWorkflow {
  file: string;
  workflow?: Workflow;
  diagnostics: Diagnostic[];
  /** Set when the file itself could not be read. */
  unreadable?: string;
}

/** Loads a workflow with every check `validate` makes, mentions included. */
export function loadChecked(file: string): CheckedWorkflow {
  try {
    const { workflow, diagnostics, prompts, agents, madeAtRun } = loadWorkflow(file);
    diagnostics.push(...mentionWarnings(prompts, agents, madeAtRun));
    diagnostics.sort(byPosition);
    return { file, workflow, diagnostics };
  } catch (e) {
    if (e instanceof WorkflowFileError) return { file, diagnostics: [], unreadable: e.message };
    throw e;
  }
}
