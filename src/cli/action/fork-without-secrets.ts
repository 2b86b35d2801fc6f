import { appendFileSync, readFileSync } from 'node:fs';
import type { StepEnd } from './action-sessions.js';

/** Where the docs say how to review a fork's pull request with a key (GitHub's own way: pull_request, then workflow_run). */
export const FORK_RECIPE = 'docs/github-action.md#pull-requests-from-forks';

/**
 * A `pull_request` job of a fork's pull request with no key: GitHub withholds the repository's
 * secrets from such a run, so the key exists and is not given. That is no workflow error: the
 * step ends neutral (a notice, `status: skipped`, exit 0, a line in the job summary pointing to
 * the recipe), not red with "ANTHROPIC_API_KEY is not set". Undefined for any other job.
 */
export function forkWithoutSecrets(env: NodeJS.ProcessEnv, keyGiven: boolean): StepEnd | undefined {
  if (keyGiven || env.ANTHROPIC_API_KEY?.trim() || env.GITHUB_EVENT_NAME !== 'pull_request' || !env.GITHUB_EVENT_PATH) return undefined;
  let pull: { head?: { repo?: { full_name?: unknown; fork?: unknown } | null }; base?: { repo?: { full_name?: unknown } } } | undefined;
  try {
    pull = (JSON.parse(readFileSync(env.GITHUB_EVENT_PATH, 'utf8')) as { pull_request?: typeof pull }).pull_request;
  } catch {
    return undefined;
  }
  const head = pull?.head?.repo;
  const fromFork =
    !head || head.fork === true || (typeof head.full_name === 'string' && head.full_name !== (pull?.base?.repo?.full_name ?? env.GITHUB_REPOSITORY));
  if (!pull || !fromFork) return undefined;
  const sentence =
    "conclave did not run: this pull request comes from a fork, and GitHub gives a fork's pull_request run no secrets, so the Anthropic key " +
    `is withheld. Review fork pull requests with the two-workflow recipe (${FORK_RECIPE}): pull_request records the change, workflow_run reviews it.`;
  if (env.GITHUB_STEP_SUMMARY) {
    try {
      appendFileSync(env.GITHUB_STEP_SUMMARY, `### ⏭️ conclave: skipped\n\n${sentence}\n`);
    } catch {
      // the notice says it all the same
    }
  }
  return { outputs: { status: 'skipped', 'exit-code': '0' }, exitCode: 0, notice: sentence };
}
