import * as github from '@actions/github';

export type CheckConclusion = 'success' | 'failure' | 'neutral';

/** GitHub refuses a check run's summary over 65,535 characters. */
const SUMMARY_LIMIT = 65_535;

/**
 * One check run of this name on the pull request's head commit (or the job's commit), completed
 * with a conclusion: created, or updated in place when the job runs again on the same commit.
 * Through the REST API at GITHUB_API_URL; the token needs `checks: write`. Returns its URL.
 */
export async function upsertCheckRun(token: string, name: string, conclusion: CheckConclusion, title: string, summary: string): Promise<string> {
  const { context } = github;
  const sha = (context.payload.pull_request?.head as { sha?: string } | undefined)?.sha ?? context.sha;
  if (!sha) throw new Error('no commit to put a check run on: neither the pull request nor GITHUB_SHA names one');
  const octokit = github.getOctokit(token);
  const where = { owner: context.repo.owner, repo: context.repo.repo };
  const output = { title, summary: summary.length > SUMMARY_LIMIT ? `${summary.slice(0, SUMMARY_LIMIT - 20)}\n\n*(cut)*` : summary };
  const listed = await octokit.rest.checks.listForRef({ ...where, ref: sha, check_name: name, per_page: 100 });
  // Only a check run this app made: another app's of the same name is not ours to change.
  const mine = listed.data.check_runs.find((run) => run.name === name && (run.app?.slug ?? 'github-actions') === 'github-actions');
  const saved = mine
    ? await octokit.rest.checks.update({ ...where, check_run_id: mine.id, status: 'completed', conclusion, output })
    : await octokit.rest.checks.create({ ...where, name, head_sha: sha, status: 'completed', conclusion, output });
  return saved.data.html_url ?? '';
}
