import { closeSync, openSync, readSync, statSync } from 'node:fs';
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

/** Loads a workflow with every check `validate` makes, mentions included. A session file is said to be one, in a sentence. */
export async function loadChecked(file: string, provider?: string): Promise<CheckedWorkflow> {
  if (looksLikeSession(file))
    return {
      file,
      diagnostics: [],
      unreadable: `${file} is a session file, not a workflow: print it with conclave show ${file}, or continue it with conclave resume ${file}`,
    };
  try {
    const { workflow, diagnostics, prompts, agents, madeAtRun } = await loadWorkflow(file, provider ? { provider } : {});
    diagnostics.push(...mentionWarnings(prompts, agents, madeAtRun));
    diagnostics.sort(byPosition);
    return { file, workflow, diagnostics };
  } catch (e) {
    if (e instanceof WorkflowFileError) return { file, diagnostics: [], unreadable: e.message };
    throw e;
  }
}

/** Whether a file is named or starts like a session file, so that `run`, `validate` and `graph` can say to use resume or show. */
export function looksLikeSession(file: string): boolean {
  if (file.endsWith('.jsonl')) return true;
  try {
    if (!statSync(file).isFile()) return false;
    const fd = openSync(file, 'r');
    const head = Buffer.alloc(64);
    const n = readSync(fd, head, 0, 64, 0);
    closeSync(fd);
    return /^\{"type":"header"/.test(head.subarray(0, n).toString('utf8'));
  } catch {
    return false;
  }
}
