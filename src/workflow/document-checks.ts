import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Diagnostic } from './diagnostic.js';
import type { WorkflowSource } from './source.js';
import { didYouMean } from './suggest.js';
import type { WorkflowSpec } from './types.js';
import { isRecord, recordOf } from './value-checks.js';

/**
 * `documents:` (docs/workflow.md: documents): each owner a declared agent with one name (not a
 * `for_each` agent, whose instances have many), one first text at most, and workspace paths
 * that stay inside the workspace.
 */
export function documentProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const out: Diagnostic[] = [];
  const agents = recordOf(spec.agents);
  const writtenBy = new Map<string, string>();
  for (const [name, document] of Object.entries(recordOf(spec.documents))) {
    if (!isRecord(document)) continue;
    const at = (key: string) => source.valuePosition(['documents', name, key]);
    const owner = document.owner;
    if (typeof owner === 'string') {
      const agent = agents[owner];
      if (!isRecord(agent))
        out.push(source.error(at('owner'), `documents.${name}.owner: no agent is named "${owner}"${didYouMean(owner, Object.keys(agents))}`));
      else if (agent.for_each !== undefined)
        out.push(
          source.error(at('owner'), `documents.${name}.owner: "${owner}" has for_each, so it is many agents; a document has one owner: name a single agent`),
        );
    }
    if (document.text !== undefined && document.file !== undefined)
      out.push(source.error(at('file'), `documents.${name} has both text and file: give its first text one way`));
    for (const key of ['file', 'write_to'] as const) {
      const path = document[key];
      if (typeof path !== 'string') continue;
      const problem = pathProblem(path) ?? (key === 'write_to' ? protectedProblem(path, spec.edit_github_workflows === true) : undefined);
      if (problem) out.push(source.error(at(key), `documents.${name}.${key} ${JSON.stringify(path)} ${problem}`));
      // Not an error: a setup step may make it. Read from the current directory, the workspace a run has unless --workspace says otherwise.
      else if (key === 'file' && document.text === undefined && !existsSync(resolve(path)))
        out.push(
          source.warning(
            at(key),
            `documents.${name}.file ${JSON.stringify(path)} does not exist in the current directory: unless a setup step makes it, the run stops ` +
              'before any turn (exit 1); check the path, or give the first text with text:',
          ),
        );
    }
    if (typeof document.write_to === 'string') {
      const other = writtenBy.get(document.write_to);
      if (other) out.push(source.error(at('write_to'), `documents.${name}.write_to is documents.${other}.write_to too: each document needs a file of its own`));
      writtenBy.set(document.write_to, name);
    }
  }
  return out;
}

/** What is wrong with a workspace path as written (the tool boundary checks the rest when it is used). */
function pathProblem(path: string): string | undefined {
  if (path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(path)) return 'is absolute: give a path inside the workspace, relative to it';
  if (path.split(/[\\/]/).includes('..')) return 'goes up with "..": give a path inside the workspace';
  if (path.endsWith('/')) return 'names a directory: give a file';
  return undefined;
}

/**
 * Where the workspace tools never write (docs/security.md), said before a run is paid for rather
 * than as an output error at its end: git's and conclave's own folders, and the GitHub workflows
 * unless the workflow sets edit_github_workflows.
 */
function protectedProblem(path: string, githubWorkflows: boolean): string | undefined {
  const parts = path
    .toLowerCase()
    .split(/[\\/]+/)
    .filter((p) => p !== '' && p !== '.');
  if (parts.includes('.git')) return "is inside a .git directory, which conclave never writes (git's configuration and hooks run code)";
  if (parts.includes('.conclave')) return "is inside .conclave, conclave's own sessions, cache and locks, which it never writes";
  if (!githubWorkflows && parts[0] === '.github' && parts[1] === 'workflows')
    return 'is a GitHub workflow, which conclave writes only with edit_github_workflows: true';
  return undefined;
}
