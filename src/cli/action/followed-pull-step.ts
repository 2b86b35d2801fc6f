import { readFileSync } from 'node:fs';
import type { StepEnd } from './action-sessions.js';
import type { Payload } from '../github/event-payload.js';
import { followedPull } from '../github/followed-pull.js';

/**
 * The Action's `pull-request` input outside `list-parked`: a workflow_run job saying which pull
 * request the run it follows was for (docs/github-action.md: pull requests from forks). Checked
 * before conclave runs, so that a pull request pushed to since ends the step neutral (status
 * `skipped`: the newer commit's run reviews it) and a number that is not that run's is refused
 * with nothing paid; undefined when conclave may run (it asks GitHub again, as the CLI does).
 */
export async function followedPullStep(command: string, given: string, token: string): Promise<StepEnd | undefined> {
  const refused = (error: string): StepEnd => ({ outputs: { status: 'invalid', 'exit-code': '2' }, exitCode: 2, error });
  if (command !== 'run') return refused('pull-request is for a new run (or list-parked: votes): a resumed run keeps the pull request it began with');
  const event = process.env.GITHUB_EVENT_NAME ?? '';
  if (event !== 'workflow_run')
    return refused(
      `pull-request names the pull request a workflow_run job reviews (or, with list-parked: votes, filters the runs); this job's event is ${event}`,
    );
  let payload: Payload = {};
  try {
    payload = JSON.parse(readFileSync(process.env.GITHUB_EVENT_PATH ?? '', 'utf8')) as Payload;
  } catch {
    return refused('pull-request needs the workflow_run event file (GITHUB_EVENT_PATH), and it could not be read');
  }
  const followed = await followedPull(payload, given, { ...process.env, GITHUB_TOKEN: token.trim() });
  if ('moved' in followed) return { outputs: { status: 'skipped', 'exit-code': '0' }, exitCode: 0, notice: `conclave did not run: ${followed.moved}` };
  if ('refused' in followed) return refused(followed.refused);
  return undefined;
}
