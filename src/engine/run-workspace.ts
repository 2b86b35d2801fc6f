import { Workspace } from '../agents/tools/workspace-root.js';
import type { RunOptions } from './run-options.js';

/** The run's workspace, and the files in it no tool may touch: the run's own (session, cache), credentials, and workflows unless the workflow allows. */
export function workspaceOf(options: Pick<RunOptions, 'place' | 'identity' | 'workflow'>): Workspace {
  return new Workspace(options.place.workspace, {
    protect: options.identity.ownFiles ?? [],
    secret: options.identity.credentials?.files ?? [],
    githubWorkflows: options.workflow.spec.edit_github_workflows === true,
  });
}
