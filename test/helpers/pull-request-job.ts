import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The repository, pull request and head commit the votes' tests run on. */
export const REPOSITORY = 'octo/widgets';
export const PULL = 7;
export const HEAD = '1111111111111111111111111111111111111111';

/**
 * The environment of a GitHub Actions job on pull request 7 of octo/widgets, its event file
 * written in `dir`, GitHub answered by the fake at `apiUrl` (test/fake-github) with `token`.
 */
export function pullRequestJob(dir: string, apiUrl: string, token = 'ghs_test_0123456789', extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const event = join(dir, 'event.json');
  writeFileSync(
    event,
    JSON.stringify({
      action: 'opened',
      number: PULL,
      pull_request: { number: PULL, head: { sha: HEAD, repo: { full_name: REPOSITORY } }, base: { repo: { full_name: REPOSITORY } } },
    }),
  );
  return {
    GITHUB_ACTIONS: 'true',
    GITHUB_REPOSITORY: REPOSITORY,
    GITHUB_SHA: 'abcdefabcdefabcdefabcdefabcdefabcdefabcd',
    GITHUB_EVENT_NAME: 'pull_request',
    GITHUB_EVENT_PATH: event,
    GITHUB_STEP_SUMMARY: join(dir, 'summary.md'),
    GITHUB_OUTPUT: join(dir, 'outputs'),
    GITHUB_API_URL: apiUrl,
    GITHUB_TOKEN: token,
    ...extra,
  };
}
