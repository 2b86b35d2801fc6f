import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeAnthropic, startFakeAnthropic } from '../fake-anthropic/server.js';
import { type FakeGitHub, startFakeGitHub } from '../fake-github/server.js';
import { bundledAction } from '../helpers/action-recipe.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';
import { plantedRepository, plantedScript, plantedWorkflow, REWORDED_PROMPT, SKIM_PROMPT } from '../fixtures/planted-bug.js';

/**
 * The Action's `experiment:` on a pull request, run from the committed bundle as a runner runs it
 * (docs/experiments.md: in the Action; test/e2e/action.test.ts runs the source entry through
 * @github/local-action, as docs/github-action.md shows): the verdict as one pull request comment and a
 * check run on the head commit, against the fake GitHub at GITHUB_API_URL; a second push updates
 * the comment in place, a re-run the check run; a fork's pull request spends only after a
 * maintainer's label.
 */

let server: FakeAnthropic | undefined;
let github: FakeGitHub | undefined;
afterEach(async () => {
  await server?.close();
  await github?.close();
  server = github = undefined;
});

const TOKEN = 'ghs_test_token_experiment_0123456789';

function commit(repo: string, prompt: string, message: string): string {
  writeFileSync(join(repo, 'planted.yml'), plantedWorkflow(prompt));
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: repo, encoding: 'utf8' }).trim();
  git('commit', '-q', '-am', message);
  return git('rev-parse', 'HEAD');
}

/** The pull request event, as GitHub writes it for a pull_request (or pull_request_target) job. */
function pullRequestEvent(repo: string, head: string, options: { fork?: boolean; labels?: string[] } = {}): string {
  const base = execFileSync('git', ['rev-parse', 'main'], { cwd: repo, encoding: 'utf8' }).trim();
  const file = join(repo, '..', `${repo.split('/').pop()}-event.json`);
  writeFileSync(
    file,
    JSON.stringify({
      pull_request: {
        number: 7,
        base: { sha: base, repo: { full_name: 'acme/shop' } },
        head: { sha: head, repo: options.fork ? { full_name: 'stranger/shop', fork: true } : { full_name: 'acme/shop', fork: false } },
        labels: (options.labels ?? []).map((name) => ({ name })),
      },
    }),
  );
  return file;
}

/** The Action's step on this pull request, from the committed bundle as a runner runs it (test/helpers/action-recipe.ts). */
let step = 0;
async function action(repo: string, event: string, eventName = 'pull_request'): Promise<{ code: number; stdout: string; outputs: Record<string, string> }> {
  const inputs = {
    experiment: 'true',
    repeat: '2',
    comment: 'true',
    'github-token': TOKEN,
    'anthropic-api-key': TEST_API_KEY,
    'experiment-label': 'conclave-experiment',
  };
  const env = {
    ...process.env,
    GITHUB_ACTIONS: '',
    GITHUB_API_URL: github!.url,
    GITHUB_REPOSITORY: 'acme/shop',
    GITHUB_EVENT_NAME: eventName,
    GITHUB_EVENT_PATH: event,
    ANTHROPIC_BASE_URL: server!.url,
  };
  step++;
  return bundledAction(inputs, repo, env, join(repo, '..', `${repo.split('/').pop()}-step-${step}`));
}

describe('the Action: experiment', () => {
  it('on a pull request: a REJECT comment and a failing check run; a second push updates the comment in place; a re-run updates the check run', async () => {
    const repo = plantedRepository(4);
    execFileSync('git', ['checkout', '-q', '-b', 'feature'], { cwd: repo });
    const first = commit(repo, SKIM_PROMPT, 'skim');
    github = await startFakeGitHub('acme/shop', 7, ['a reviewer wrote this']);
    server = await startFakeAnthropic(plantedScript({ found: () => 1, skimDrop: 1, seed: 'action' }), { batches: { endsAfterMs: 200 } });

    const rejected = await action(repo, pullRequestEvent(repo, first));
    expect(rejected.code, rejected.stdout.slice(-3000)).toBe(1);
    expect(rejected.outputs['experiment-verdict']).toBe('REJECT');
    expect(rejected.outputs['experiment-reason']).toBe('candidate_regressed');
    expect(github.comments).toHaveLength(2);
    const comment = github.comments[1]!;
    expect(comment.body.split('\n')[0]).toBe('<!-- conclave experiment: planted.test.yml -->');
    expect(comment.body).toContain('### ❌ conclave experiment: **REJECT** (`candidate_regressed`)');
    expect(comment.body).toContain('| pass rate | 100.0 % | 0.0 % | −100.0 points |');
    expect(comment.body).toMatch(/\| worst cases \| base \| head \|\n\|---\|---\|---\|\n\| case 1 \| 2\/2 \| 0\/2 \|/);
    expect(comment.body).toContain('The edit touches @\u200blead at `system[0].text`.');
    // The worst case's page is written beside its session; off GitHub there is no artifact store to upload it to, and a warning says where it is.
    expect(rejected.stdout).toMatch(
      /::warning::conclave could not upload the run's page as an artifact \(it is at \.conclave\/experiments\/[^/]+\/runs\/conclave-experiment-worst-case\.html\)/,
    );
    expect(github.checkRuns).toHaveLength(1);
    expect(github.checkRuns[0]).toMatchObject({
      name: 'conclave experiment',
      head_sha: first,
      status: 'completed',
      conclusion: 'failure',
      output: { title: 'REJECT (candidate_regressed)' },
    });
    expect(github.checkRuns[0]!.output.summary).toBe(comment.body);
    expect(server.requests.filter((r) => !r.batch)).toHaveLength(0);

    // A second push: the prompt reworded, which the team answers as the base.
    const second = commit(repo, REWORDED_PROMPT, 'reword');
    const event = pullRequestEvent(repo, second);
    const promoted = await action(repo, event);
    expect(promoted.code, promoted.stdout.slice(-3000)).toBe(0);
    // As good as the base in every run, but four inputs say too little: INCONCLUSIVE, a neutral check.
    expect(promoted.outputs['experiment-verdict']).toBe('INCONCLUSIVE');
    expect(github.comments).toHaveLength(2);
    expect(github.comments[1]!.id).toBe(comment.id);
    expect(github.comments[1]!.body).toContain('### ⚪ conclave experiment: **INCONCLUSIVE** (`evidence_insufficient`)');
    expect(github.checkRuns.map((c) => [c.head_sha, c.conclusion])).toEqual([
      [first, 'failure'],
      [second, 'neutral'],
    ]);
    // The job run again on the same commit: its check run is updated, not doubled.
    const again = await action(repo, event);
    expect(again.code).toBe(0);
    expect(github.checkRuns).toHaveLength(2);
    expect(github.comments).toHaveLength(2);
  }, 120_000);

  it("a fork's pull request: no secrets on pull_request, no label, a reader's label: skipped, nothing spent; a writer's label: it runs", async () => {
    const repo = plantedRepository(2);
    execFileSync('git', ['checkout', '-q', '-b', 'feature'], { cwd: repo });
    const head = commit(repo, SKIM_PROMPT, 'skim');
    github = await startFakeGitHub('acme/shop', 7);
    github.people.permissions = { maintainer: 'maintain', reader: 'read' };
    server = await startFakeAnthropic(plantedScript({ found: () => 1, skimDrop: 1, seed: 'fork' }), { batches: { endsAfterMs: 200 } });

    const untrusted = await action(repo, pullRequestEvent(repo, head, { fork: true }));
    expect(untrusted.code).toBe(0);
    expect(untrusted.outputs.status).toBe('skipped');
    expect(untrusted.stdout).toContain("GitHub gives a fork's pull_request job no secrets");
    const unlabelled = await action(repo, pullRequestEvent(repo, head, { fork: true }), 'pull_request_target');
    expect(unlabelled.outputs.status).toBe('skipped');
    expect(unlabelled.stdout).toContain('an experiment spends only when a maintainer adds the label "conclave-experiment"');
    github.labelled.push({ label: 'conclave-experiment', by: 'reader' });
    const byReader = await action(repo, pullRequestEvent(repo, head, { fork: true, labels: ['conclave-experiment'] }), 'pull_request_target');
    expect(byReader.outputs.status).toBe('skipped');
    expect(byReader.stdout).toContain('was added by reader, whose permission is read');
    expect(server.requests).toHaveLength(0);
    expect(server.counts).toHaveLength(0);

    github.labelled.push({ label: 'conclave-experiment', by: 'maintainer' });
    const byMaintainer = await action(repo, pullRequestEvent(repo, head, { fork: true, labels: ['conclave-experiment'] }), 'pull_request_target');
    expect(byMaintainer.stdout).toContain('maintainer (maintain) added the label "conclave-experiment"');
    expect(byMaintainer.outputs['experiment-verdict']).toBeDefined();
    expect(server.requests.length).toBeGreaterThan(0);
  }, 120_000);
});
