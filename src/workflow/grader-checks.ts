import { GRADER_IDS, rubricAgent } from '../session/graders/grader-ids.js';
import type { Diagnostic } from './diagnostic.js';
import type { WorkflowSource } from './source.js';
import type { WorkflowSpec } from './types.js';
import { recordOf } from './value-checks.js';

/**
 * `graders:` (docs/graders.md): an id is none of conclave's own graders (a case's `graders:` names
 * both), and no agent or template has the name its scoring call is recorded under.
 */
export function graderProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const out: Diagnostic[] = [];
  const names = new Set([...Object.keys(recordOf(spec.agents)), ...Object.keys(recordOf(spec.templates))]);
  for (const id of Object.keys(recordOf(spec.graders))) {
    const at = source.keyPosition(['graders', id]);
    if (GRADER_IDS.includes(id))
      out.push(source.error(at, `graders.${id}: "${id}" is one of conclave's own graders (docs/graders.md): give the rubric another id`));
    else if (names.has(rubricAgent(id)))
      out.push(source.error(at, `graders.${id}: its scoring call is recorded as agent "${rubricAgent(id)}", which the workflow already names: rename one`));
  }
  return out;
}
