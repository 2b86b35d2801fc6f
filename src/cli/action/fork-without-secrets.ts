import { appendFileSync, readFileSync } from 'node:fs';
import type { StepEnd } from './action-sessions.js';
import { docsLink } from '../github/docs-link.js';

/** Where the docs say how to review a fork's pull request with a key (GitHub's own way: pull_request, then workflow_run). */
export const FORK_RECIPE = 'docs/github-action.md#pull-requests-from-forks';

/** The recipe as a link a person can open (docs-link.ts). */
export function forkRecipe(env: NodeJS.ProcessEnv): string {
  return docsLink(env, FORK_RECIPE);
}

/** Whether this is a `pull_request` job of a fork's pull request, as its event says: GitHub gives such a job no secrets. */
export function forkPullRequestJob(env: NodeJS.ProcessEnv): boolean {
  if (env.GITHUB_EVENT_NAME !== 'pull_request' || !env.GITHUB_EVENT_PATH) return false;
  let pull: { head?: { repo?: { full_name?: unknown; fork?: unknown } | null }; base?: { repo?: { full_name?: unknown } } } | undefined;
  try {
    pull = (JSON.parse(readFileSync(env.GITHUB_EVENT_PATH, 'utf8')) as { pull_request?: typeof pull }).pull_request;
  } catch {
    return false;
  }
  if (!pull) return false;
  const head = pull.head?.repo;
  return !head || head.fork === true || (typeof head.full_name === 'string' && head.full_name !== (pull.base?.repo?.full_name ?? env.GITHUB_REPOSITORY));
}

/** Why a fork's pull_request job has no key, and what to do instead. */
export function forkSentence(env: NodeJS.ProcessEnv): string {
  return (
    "conclave did not run: this pull request comes from a fork, and GitHub gives a fork's pull_request run no secrets, so the Anthropic key " +
    `is withheld. Review fork pull requests with the two-workflow recipe (${forkRecipe(env)}): pull_request records the change, workflow_run reviews it.`
  );
}

/**
 * A `pull_request` job of a fork's pull request with no key: GitHub withholds the repository's
 * secrets from such a run, so the key exists and is not given. That is no workflow error: the
 * step ends neutral (a notice, `status: skipped`, exit 0, a line in the job summary pointing to
 * the recipe), not red with "ANTHROPIC_API_KEY is not set". Undefined for any other job.
 */
export function forkWithoutSecrets(env: NodeJS.ProcessEnv, keyGiven: boolean): StepEnd | undefined {
  if (keyGiven || env.ANTHROPIC_API_KEY?.trim() || !forkPullRequestJob(env)) return undefined;
  const sentence = forkSentence(env);
  if (env.GITHUB_STEP_SUMMARY) {
    try {
      appendFileSync(env.GITHUB_STEP_SUMMARY, `### ⏭️ conclave: skipped\n\n${sentence}\n`);
    } catch {
      // the notice says it all the same
    }
  }
  return { outputs: { status: 'skipped', 'exit-code': '0' }, exitCode: 0, notice: sentence };
}
