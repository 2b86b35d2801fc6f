import { readFileSync } from 'node:fs';

/**
 * Where a run in GitHub Actions began: the repository, the commit its workspace was
 * (GITHUB_SHA) and the pull request, when the event was one. Kept in the session header, so that
 * a later job that resumes the run (a scheduled one, with no pull request of its own) checks out
 * the same commit and keeps the pull request's comment up to date (docs/github-action.md).
 */
export function githubOrigin(env: NodeJS.ProcessEnv): { github?: { repository: string; commit: string; pull_request?: number } } {
  const { GITHUB_ACTIONS, GITHUB_REPOSITORY: repository, GITHUB_SHA: commit } = env;
  if (GITHUB_ACTIONS !== 'true' || !repository || !commit || !/^[0-9a-f]{40}$/.test(commit)) return {};
  const pull = pullRequestOf(env.GITHUB_EVENT_PATH);
  return { github: { repository, commit, ...(pull !== undefined ? { pull_request: pull } : {}) } };
}

/** The pull request number of the event that started the job, if it was a pull request's (or an issue comment on one). */
function pullRequestOf(eventPath: string | undefined): number | undefined {
  if (!eventPath) return undefined;
  try {
    const event = JSON.parse(readFileSync(eventPath, 'utf8')) as { pull_request?: { number?: unknown }; issue?: { number?: unknown; pull_request?: unknown } };
    const number = event.pull_request?.number ?? (event.issue?.pull_request ? event.issue.number : undefined);
    return Number.isSafeInteger(number) && (number as number) > 0 ? (number as number) : undefined;
  } catch {
    return undefined;
  }
}
