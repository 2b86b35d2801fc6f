import { readFileSync } from 'node:fs';

/**
 * Where a run in GitHub Actions began: the repository, the commit its workspace was
 * (GITHUB_SHA) and the pull request, when the event was one. Kept in the session header, so that
 * a later job that resumes the run (a scheduled one, with no pull request of its own) checks out
 * the same commit and keeps the pull request's comment up to date (docs/github-action.md).
 * `asked`: the pull request's head as GitHub said it, for an event that does not say it (a comment),
 * and its number for a workflow_run job that was told it (followed-pull.ts).
 */
export function githubOrigin(
  env: NodeJS.ProcessEnv,
  asked: { head?: string; pull?: number } = {},
): { github?: { repository: string; commit: string; pull_request?: number } } {
  const { GITHUB_ACTIONS, GITHUB_REPOSITORY: repository, GITHUB_SHA: commit } = env;
  if (GITHUB_ACTIONS !== 'true' || !repository || !commit || !/^[0-9a-f]{40}$/.test(commit)) return {};
  const inEvent = asked.pull !== undefined ? { number: asked.pull } : pullRequestOf(env.GITHUB_EVENT_PATH);
  const { number, head = number !== undefined ? asked.head : undefined } = inEvent;
  return { github: { repository, commit, ...(number !== undefined ? { pull_request: number } : {}), ...(head !== undefined ? { head } : {}) } };
}

/**
 * The pull request of the event that started the job, if it was a pull request's (or an issue
 * comment on one): its number, and its head commit when the event says (ballots are made against it).
 */
function pullRequestOf(eventPath: string | undefined): { number?: number; head?: string } {
  if (!eventPath) return {};
  try {
    const event = JSON.parse(readFileSync(eventPath, 'utf8')) as {
      pull_request?: { number?: unknown; head?: { sha?: unknown } };
      issue?: { number?: unknown; pull_request?: unknown };
    };
    const number = event.pull_request?.number ?? (event.issue?.pull_request ? event.issue.number : undefined);
    if (!(Number.isSafeInteger(number) && (number as number) > 0)) return {};
    const head = event.pull_request?.head?.sha;
    return { number: number as number, ...(typeof head === 'string' && /^[0-9a-f]{40}$/.test(head) ? { head } : {}) };
  } catch {
    return {};
  }
}
