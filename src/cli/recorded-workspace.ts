import { existsSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import type { SessionHeader } from '../session/format.js';
import { UsageError } from './usage-error.js';

/**
 * The directory a run's setup steps and workspace tools work in (`--workspace`, default the
 * current one). A run records the one it was given when it lies below the current directory, as
 * a relative path (docs/session-format.md: `workspace`), so that a resume reads the same tree: a
 * fork's pull request is reviewed from a checkout of its own beside the repository's
 * (docs/github-action.md: pull requests from forks). A path that leaves the current directory is
 * never taken from a session file's word.
 */
export function workspaceOfRun(given: string | undefined, cwd = process.cwd()): { workspace: string; recorded?: string } {
  const workspace = given ?? cwd;
  if (!existsSync(workspace) || !statSync(workspace).isDirectory()) throw new UsageError(`the workspace directory ${workspace} does not exist`);
  const below = given === undefined ? '' : relative(cwd, resolve(cwd, given));
  return below && inside(below) ? { workspace, recorded: below.split(sep).join('/') } : { workspace };
}

/** The workspace of a resume: the one given, else the one the run recorded (it must be there), else the current directory. */
export function workspaceOfResume(given: string | undefined, header: SessionHeader, file: string, cwd = process.cwd()): string {
  if (given !== undefined) return workspaceOfRun(given, cwd).workspace;
  const recorded = header.workspace;
  if (recorded === undefined) return cwd;
  if (!inside(recorded))
    throw new UsageError(`${file} names its workspace as ${JSON.stringify(recorded)}, outside the current directory: give it with --workspace DIR`);
  const workspace = resolve(cwd, recorded);
  if (!existsSync(workspace) || !statSync(workspace).isDirectory())
    throw new UsageError(
      `the run read its files from ${recorded} (its --workspace), which is not here: ` +
        "put the same tree there (for a fork's pull request, a checkout of its head), or give --workspace DIR",
    );
  return workspace;
}

function inside(path: string): boolean {
  return path !== '' && !isAbsolute(path) && !path.split(/[\\/]/).includes('..');
}
