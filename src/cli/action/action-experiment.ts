import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as core from '@actions/core';
import { EXIT } from '../../exit-codes.js';
import { GitHubApi, GitHubUnavailable, permissionOf } from '../github/github-api.js';
import { docsLink } from '../github/docs-link.js';
import type { StepEnd } from './action-sessions.js';

/**
 * The Action's `experiment:` (docs/experiments.md: in the Action): `conclave experiment` on the
 * pull request against its base, then its verdict where a reviewer looks: the pull request's one
 * experiment comment (updated in place), a check run (REJECT fails it, INCONCLUSIVE is neutral),
 * the job summary conclave wrote, and the page of the worst case's run.
 */

/** `experiment: TESTS`: the arguments of `conclave experiment`, the base being the pull request's unless `base:` names one. */
export function experimentArgs(value: (name: string) => string, env: NodeJS.ProcessEnv): string[] | string {
  if (value('workflow') || value('resume-from') || value('test'))
    return 'experiment compares two versions of test files: give experiment alone, not with workflow, resume-from or test';
  const base = value('base') || pullBase(env);
  if (!base) return "experiment needs base: the revision to compare with (in a pull request job it is the pull request's base)";
  const paths = value('experiment')
    .split(/\s+/)
    .filter((p) => p && p !== 'true');
  const args = ['experiment', ...paths, '--base', base];
  if (value('repeat')) args.push('--repeat', value('repeat'));
  if (value('max-estimate-usd')) args.push('--max-estimate-usd', value('max-estimate-usd'));
  if (value('park') === 'true') args.push('--park');
  return args;
}

function pullRequestOf(env: NodeJS.ProcessEnv): PullRequest | undefined {
  if (!env.GITHUB_EVENT_PATH) return undefined;
  try {
    return (JSON.parse(readFileSync(env.GITHUB_EVENT_PATH, 'utf8')) as { pull_request?: PullRequest }).pull_request;
  } catch {
    return undefined;
  }
}

interface PullRequest {
  number?: number;
  base?: { sha?: string; repo?: { full_name?: string } };
  head?: { sha?: string; repo?: { full_name?: string; fork?: boolean } | null };
  labels?: { name?: string }[];
}

/** The base commit the event names, or the base branch as the checkout fetched it. */
function pullBase(env: NodeJS.ProcessEnv): string | undefined {
  const sha = pullRequestOf(env)?.base?.sha;
  if (typeof sha === 'string' && /^[0-9a-f]{40}$/.test(sha)) return sha;
  return env.GITHUB_BASE_REF ? `origin/${env.GITHUB_BASE_REF}` : undefined;
}

/**
 * A fork's pull request spends only when a maintainer asks (DESIGN: people): the label named by
 * `experiment-label` on it, added by someone GitHub says may write to the repository. A
 * `pull_request` job of a fork has no secrets at all. Otherwise the step ends neutral, saying why;
 * undefined when the experiment may run. GitHub that cannot answer: refused (fail closed).
 */
export async function experimentGate(env: NodeJS.ProcessEnv, token: string, label: string): Promise<StepEnd | undefined> {
  const pull = pullRequestOf(env);
  if (!pull) return undefined;
  const head = pull.head?.repo;
  const fork = !head || head.fork === true || (head.full_name !== undefined && head.full_name !== (pull.base?.repo?.full_name ?? env.GITHUB_REPOSITORY));
  if (!fork) return undefined;
  const recipe = docsLink(env, 'docs/experiments.md#pull-requests-from-forks');
  const skip = (why: string): StepEnd => ({
    outputs: { status: 'skipped', 'exit-code': '0' },
    exitCode: 0,
    notice: `conclave experiment did not run: ${why} (${recipe})`,
  });
  if (env.GITHUB_EVENT_NAME === 'pull_request')
    return skip(
      "this pull request comes from a fork, and GitHub gives a fork's pull_request job no secrets: " +
        "run experiments on pull_request_target, gated by a maintainer's label",
    );
  if (!pull.labels?.some((l) => l.name === label))
    return skip(`this pull request comes from a fork: an experiment spends only when a maintainer adds the label "${label}"`);
  const api = GitHubApi.fromEnv({ ...env, GITHUB_TOKEN: token });
  if (typeof api === 'string') return skip(`the label "${label}" is checked with GitHub, and ${api}`);
  const repository = env.GITHUB_REPOSITORY ?? '';
  try {
    const events = (await api.list(`/repos/${repository}/issues/${pull.number}/events?per_page=100`)) ?? [];
    const labelled = events.filter((e): e is { event: string; label: { name: string }; actor: { login: string } } => {
      const x = e as { event?: unknown; label?: { name?: unknown }; actor?: { login?: unknown } };
      return x.event === 'labeled' && x.label?.name === label && typeof x.actor?.login === 'string';
    });
    const by = labelled.at(-1)?.actor.login;
    if (!by) return skip(`GitHub does not say who added the label "${label}"`);
    const { level, mayWrite } = await permissionOf(api, repository, by);
    if (!mayWrite)
      return skip(
        `the label "${label}" was added by ${by}, whose permission is ${level}: only someone who may write to the repository can let a fork's experiment spend`,
      );
    core.info(`conclave: ${by} (${level}) added the label "${label}": the experiment of this fork's pull request runs`);
    return undefined;
  } catch (e) {
    if (e instanceof GitHubUnavailable) return skip(`the label "${label}" could not be checked with GitHub: ${e.message}`);
    throw e;
  }
}

/** After `conclave experiment`: the step's outputs, the worst case's page, the comment and the check run; the step fails on REJECT. */
export async function experimentEnd(code: number, outputs: Record<string, string>, cwd: string, input: (name: string) => string): Promise<void> {
  for (const [name, value] of Object.entries(outputs)) core.setOutput(name, value);
  if (outputs['exit-code'] === undefined) core.setOutput('exit-code', String(code));
  core.setOutput(
    'status',
    code === EXIT.waiting ? 'waiting' : (outputs['experiment-verdict'] ?? (code === EXIT.usage ? 'invalid' : code === EXIT.limit ? 'limit' : 'error')),
  );
  const dir = outputs['experiment-dir'];
  const token = input('github-token').trim();
  if (dir && token) {
    core.setSecret(token);
    await publish(resolve(cwd, dir), cwd, token, input).catch((e: unknown) =>
      core.warning(`conclave could not publish the experiment's verdict: ${(e as Error).message}`),
    );
  }
  process.exitCode = code === EXIT.waiting ? 0 : code;
}

async function publish(dir: string, cwd: string, token: string, input: (name: string) => string): Promise<void> {
  const [{ readExperiment }, { experimentMarkdown, experimentMarker }, { worstCases }] = await Promise.all([
    import('../experiment/experiment-file.js'),
    import('../experiment/experiment-markdown.js'),
    import('../experiment/experiment-text.js'),
  ]);
  const experiment = readExperiment(dir);
  const result = experiment.result;
  if (!result) return;
  const worst = worstCases(result.cases)[0];
  const index = worst ? experiment.cases.findIndex((c) => c.file === worst.file && c.name === worst.name) : -1;
  const run = experiment.runs.find((r) => r.case === index && r.version === 'head');
  const page =
    run && input('report').trim() !== 'false'
      ? await (await import('./action-report.js')).publishReport(join(dir, run.session), cwd, 'conclave-experiment-worst-case')
      : undefined;
  const body = experimentMarkdown(experiment, result, page);
  if (input('comment').trim() === 'true') {
    const { upsertComment } = await import('../github/pr-comment.js');
    const url = await upsertComment(token, body, experimentMarker(experiment.test_files), undefined);
    core.info(`conclave: the experiment's comment is at ${url}`);
  }
  const { upsertCheckRun } = await import('../github/check-run.js');
  const conclusion = result.verdict === 'REJECT' ? 'failure' : result.verdict === 'INCONCLUSIVE' ? 'neutral' : 'success';
  try {
    const url = await upsertCheckRun(token, 'conclave experiment', conclusion, `${result.verdict} (${result.reason})`, body);
    core.info(`conclave: the check run is at ${url}`);
  } catch (e) {
    core.warning(`conclave could not write the check run (the token needs checks: write): ${(e as Error).message}`);
  }
}
