import { field, type Payload, text } from './event-payload.js';
import { GitHubApi, GitHubUnavailable } from './github-api.js';

/** The environment variable the Action's `pull-request` input reaches conclave by, in a workflow_run job. */
export const FOLLOWED_PULL_ENV = 'CONCLAVE_PULL_REQUEST';

/** What GitHub says of the pull request a workflow_run job was told it reviews. */
export type FollowedPull = { pull: Payload; number: number } | { moved: string } | { refused: string };

/**
 * A `workflow_run` job that reviews a fork's pull request (docs/github-action.md: pull requests
 * from forks) learns the pull request's number from the artifact of the run it follows, which the
 * fork's code wrote: the number is taken only when GitHub says that pull request's head is the
 * commit, repository and branch that run ran. A pull request pushed to since (same repository and
 * branch, a newer commit) has `moved`: the newer commit's own run reviews it. Anything else is
 * `refused`.
 */
export async function followedPull(payload: Payload, given: string, env: NodeJS.ProcessEnv): Promise<FollowedPull> {
  if (!/^[1-9]\d{0,8}$/.test(given.trim())) return { refused: `pull-request must be a pull request's number; found ${JSON.stringify(given)}` };
  const number = Number(given.trim());
  const run = field(payload, 'workflow_run');
  const ran = { sha: text(run, 'head_sha'), repository: text(field(run, 'head_repository'), 'full_name'), branch: text(run, 'head_branch') };
  if (!ran.sha || !ran.repository) return { refused: 'pull-request is for a workflow_run job: the event does not say which commit the run it follows ran' };
  const api = GitHubApi.fromEnv(env);
  if (typeof api === 'string' || !env.GITHUB_REPOSITORY) return { refused: `pull request #${number} could not be asked of GitHub (no GITHUB_TOKEN)` };
  let pull: Payload | undefined;
  try {
    pull = await api.get(`/repos/${env.GITHUB_REPOSITORY}/pulls/${number}`);
  } catch (e) {
    if (e instanceof GitHubUnavailable) return { refused: `pull request #${number} could not be asked of GitHub: ${e.message}` };
    throw e;
  }
  if (!pull) return { refused: `pull request #${number} was not found in ${env.GITHUB_REPOSITORY}` };
  const head = field(pull, 'head');
  const now = { sha: text(head, 'sha'), repository: text(field(head, 'repo'), 'full_name'), branch: text(head, 'ref') };
  if (now.sha === ran.sha && now.repository === ran.repository) return { pull, number };
  const ranOn = `${ran.repository}@${ran.sha.slice(0, 12)}`;
  if (now.repository === ran.repository && now.branch === ran.branch && ran.branch)
    return {
      moved: `pull request #${number} has moved on to ${now.sha.slice(0, 12)} since the run this job follows (${ranOn}): the newer commit's run reviews it`,
    };
  return {
    refused:
      `pull request #${number} is not the one the followed run ran: its head is ${now.repository || 'unknown'}@${now.sha.slice(0, 12) || 'unknown'}, ` +
      `the run ran ${ranOn} (the number comes from that run's artifact, which its code wrote)`,
  };
}
