import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { BOT_LOGIN, startFakeGitHub } from '../fake-github/server.js';
import { sarifValidator } from '../helpers/sarif.js';
import { CRASH_WORKFLOW, crashScript } from '../fixtures/crash-team.js';
import { reviewScript } from '../fixtures/review-team.js';
import { ROOT } from '../helpers/cli.js';
import { outputsOf } from '../helpers/action-recipe.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';
import { cloudEnv } from '../helpers/clouds.js';
import { FAKE_AWS } from '../fake-anthropic/clouds.js';
import { missingStores, startRedis } from '../helpers/stores.js';

const action = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as {
  inputs: Record<string, { required?: boolean; default?: string }>;
  outputs: Record<string, { description: string }>;
  runs: { using: string; main: string };
};

/**
 * Runs the committed Action as the runner runs a node24 action: `node action/main.js` in the
 * workspace, each input as INPUT_NAME (defaults from action.yml), the GITHUB_* files, and the
 * job's own environment (`jobEnv`), nothing else: no PATH to a conclave, no node_modules to lean on.
 */
function runAction(inputs: Record<string, string>, workspace: string, jobEnv: NodeJS.ProcessEnv = {}) {
  writeFileSync(join(workspace, 'output.txt'), '');
  writeFileSync(join(workspace, 'summary.md'), '');
  const given = Object.fromEntries(Object.entries(action.inputs).map(([name, spec]) => [`INPUT_${name.toUpperCase()}`, inputs[name] ?? spec.default ?? '']));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TMPDIR: process.env.TMPDIR,
    GITHUB_ACTIONS: 'true',
    GITHUB_WORKSPACE: workspace,
    GITHUB_OUTPUT: join(workspace, 'output.txt'),
    GITHUB_STEP_SUMMARY: join(workspace, 'summary.md'),
    ANTHROPIC_BASE_URL: server.url,
    ...jobEnv,
    ...given,
  };
  return new Promise<{ code: number; stdout: string; stderr: string; outputs: Record<string, string>; summary: string }>((resolve) => {
    execFile(process.execPath, [join(ROOT, action.runs.main)], { cwd: workspace, env }, (error, stdout, stderr) => {
      resolve({
        code: error ? Number(error.code) : 0,
        stdout,
        stderr,
        outputs: outputsOf(readFileSync(join(workspace, 'output.txt'), 'utf8')),
        summary: readFileSync(join(workspace, 'summary.md'), 'utf8'),
      });
    });
  });
}

/** The secret a coordinator job and its worker jobs share: one as the workers-secret input, the other in the job's env. */
const WORKERS_SECRET = 'the-repository-secret-of-the-workers-0123456789';

let server: FakeAnthropic;
afterEach(() => server?.close());

describe('action.yml', () => {
  it('is a node24 JavaScript action whose entry is the committed bundle, reading every input it declares', () => {
    expect(action.runs).toEqual({ using: 'node24', main: 'action/main.js' });
    const entry = ['action-main.ts', 'action-experiment.ts'].map((f) => readFileSync(join(ROOT, 'src/cli/action', f), 'utf8')).join('\n');
    for (const name of Object.keys(action.inputs)) expect(entry, `input ${name}`).toContain(`'${name}'`);
  });

  it("runs locally with GitHub's @github/local-action, as docs/github-action.md shows: run() of the source entry, its outputs seen", async () => {
    server = await startFakeAnthropic(crashScript(0));
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-local-action-'));
    writeFileSync(join(workspace, 'review.yml'), CRASH_WORKFLOW);
    writeFileSync(
      join(workspace, '.env'),
      `INPUT_WORKFLOW=review.yml\nINPUT_ANTHROPIC-API-KEY=${TEST_API_KEY}\nGITHUB_WORKSPACE=${workspace}\nANTHROPIC_BASE_URL=${server.url}\n`,
    );
    // The line the docs give: npx @github/local-action run . src/cli/action/action-main.ts .env
    const result = await new Promise<{ code: number; stdout: string }>((done) =>
      execFile(
        join(ROOT, 'node_modules/.bin/local-action'),
        ['run', '.', 'src/cli/action/action-main.ts', join(workspace, '.env')],
        { cwd: ROOT, env: { ...process.env, GITHUB_ACTIONS: '', GITHUB_OUTPUT: '', GITHUB_STEP_SUMMARY: '' }, maxBuffer: 64 * 1024 * 1024 },
        (e, stdout) => done({ code: e ? Number(e.code ?? 1) : 0, stdout }),
      ),
    );
    expect(result.code, result.stdout.slice(-3000)).toBe(0);
    const outputs = result.stdout.slice(result.stdout.indexOf('Action Outputs'));
    for (const [name, value] of [
      ['status', 'success'],
      ['exit-code', '0'],
      ['verdict', 'ship'],
    ])
      expect(outputs).toMatch(new RegExp(`'${name}'\\s*│\\s*'${value}'`));
    expect(server.requests.length).toBeGreaterThan(0);
  }, 60_000);

  it('the committed bundle is what a fresh build of the sources gives', async () => {
    const { buildAction } = (await import(join(ROOT, 'scripts/build-action.js'))) as { buildAction(dir: string): Promise<void> };
    const fresh = mkdtempSync(join(tmpdir(), 'conclave-action-build-'));
    await buildAction(fresh);
    const files = (dir: string): string[] =>
      readdirSync(dir, { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.js'))
        .sort();
    expect(files(join(ROOT, 'action')), 'run npm run build:action and commit action/').toEqual(files(fresh));
    for (const file of files(fresh)) {
      expect(
        readFileSync(join(ROOT, 'action', file), 'utf8') === readFileSync(join(fresh, file), 'utf8'),
        `action/${file} differs from a fresh build: run npm run build:action and commit action/`,
      ).toBe(true);
    }
  }, 60_000);

  it('runs a workflow as GitHub would and sets every output, with the key nowhere in the logs, summary or session', async () => {
    server = await startFakeAnthropic(crashScript(0));
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
    mkdirSync(join(workspace, 'repo'));
    writeFileSync(
      join(workspace, 'repo', 'review.yml'),
      CRASH_WORKFLOW.replace(
        'kickoff: Check the three parts, then decide.',
        'inputs:\n  area: { type: string }\nkickoff: Check the three parts of $<< inputs.area >>, then decide.',
      ),
    );
    const result = await runAction(
      {
        workflow: 'review.yml',
        inputs: '{ area: billing }',
        'anthropic-api-key': TEST_API_KEY,
        'working-directory': 'repo',
        'budget-usd': '3',
        'session-file': 'session.jsonl',
      },
      workspace,
    );
    expect(result.code, result.stderr).toBe(0);
    const fromAction = Object.fromEntries(Object.keys(action.outputs).map((name) => [name, result.outputs[name]]));
    expect(fromAction).toMatchObject({ status: 'success', 'exit-code': '0', 'session-file': 'session.jsonl' });
    expect(Number(fromAction['cost-usd'])).toBeGreaterThan(0);
    expect(JSON.parse(fromAction.outputs!)).toEqual({ verdict: 'ship', summary: 'verdict ship', answers: 'part a ok / part b ok / part c ok' });
    expect(result.outputs.verdict).toBe('ship');
    for (const section of ['## ✅ conclave: review.yml', '### Outputs', '### Transcript', '### Proposals', '### Usage and cost'])
      expect(result.summary).toContain(section);
    const session = readFileSync(join(workspace, 'repo', 'session.jsonl'), 'utf8');
    expect(session).toContain('Check the three parts of billing');
    for (const text of [result.stdout.replaceAll(`::add-mask::${TEST_API_KEY}\n`, ''), result.stderr, result.summary, session])
      expect(text).not.toContain(TEST_API_KEY);
    expect(result.stdout.split(`::add-mask::${TEST_API_KEY}\n`), 'the key is masked once').toHaveLength(2);
    expect(JSON.parse(session.split('\n')[1]!).limits.budgetUsd).toBe(3);
  });

  it('turns an invalid workflow into annotations with file, line and column, and exit-code 2', async () => {
    server = await startFakeAnthropic({});
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
    writeFileSync(join(workspace, 'broken.yml'), 'name: Broken Name\nagents:\n  lead: { role: boss }\nkickoff: hi\n');
    const result = await runAction({ workflow: 'broken.yml', 'anthropic-api-key': TEST_API_KEY }, workspace);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('::error file=broken.yml,line=1,col=7,title=conclave workflow error::name must be lowercase letters, digits and dashes');
    expect(result.stdout).toContain(
      '::error file=broken.yml,line=3,col=17,title=conclave workflow error::agents.lead.role must be "manager" or "worker"; found the string "boss"',
    );
    expect(result.outputs).toMatchObject({ status: 'invalid', 'exit-code': '2' });
    expect(readdirSync(workspace)).not.toContain('.conclave');
    // The job summary says what is wrong, each problem at its place.
    expect(result.summary).toContain('## ❌ conclave: broken.yml');
    expect(result.summary).toContain('**invalid** (exit 2): the workflow has 2 errors; nothing was run');
    expect(result.summary).toContain('| broken.yml:3:17 | agents.lead.role must be "manager" or "worker"; found the string "boss" |');
    // In a working-directory, the annotations name the file as the repository does.
    mkdirSync(join(workspace, 'sub'));
    writeFileSync(join(workspace, 'sub', 'broken.yml'), 'name: Broken Name\nagents:\n  lead: { role: manager }\nkickoff: hi\n');
    const nested = await runAction({ workflow: 'broken.yml', 'working-directory': 'sub', 'anthropic-api-key': TEST_API_KEY }, workspace);
    expect(nested.code).toBe(2);
    expect(nested.stdout).toContain(
      '::error file=sub/broken.yml,line=1,col=7,title=conclave workflow error::name must be lowercase letters, digits and dashes',
    );
    expect(nested.summary).toContain('| sub/broken.yml:1:7 |');
  });

  it('test: runs the test files offline: passed with the job summary; a failed expectation an annotation at its line, status failed, the JUnit written', async () => {
    server = await startFakeAnthropic({});
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
    mkdirSync(join(workspace, 'examples'));
    for (const file of ['pr-review.yml', 'pr-review.session.jsonl', 'pr-review.test.yml'])
      writeFileSync(join(workspace, 'examples', file), readFileSync(join(ROOT, 'examples', file)));
    const passed = await runAction({ test: 'true' }, workspace);
    expect(passed.code, passed.stdout + passed.stderr).toBe(0);
    expect(passed.outputs).toMatchObject({ status: 'passed', 'exit-code': '0' });
    expect(passed.summary).toContain('## ✅ conclave test: 1 passed, 0 failed');
    expect(passed.summary).toContain('| examples/pr-review.test.yml › asks for changes to a SQL injection | ✅ pass | 1/1 | ');
    expect(server.requests).toHaveLength(0);

    const test = join(workspace, 'examples', 'pr-review.test.yml');
    writeFileSync(test, readFileSync(test, 'utf8').replace('proposals: { verdict: request-changes }', 'proposals: { verdict: approve }'));
    const line =
      readFileSync(test, 'utf8')
        .split('\n')
        .findIndex((l) => l.includes('verdict: approve')) + 1;
    const failed = await runAction({ test: 'examples/pr-review.test.yml', junit: 'results.xml' }, workspace);
    expect(failed.code).toBe(1);
    expect(failed.outputs).toMatchObject({ status: 'failed', 'exit-code': '1' });
    expect(failed.stdout).toContain(
      `::error file=examples/pr-review.test.yml,line=${line},col=20,title=conclave test › proposals.verdict::asks for changes to a SQL injection: proposal "verdict": expected "approve" to win`,
    );
    expect(readFileSync(join(workspace, 'results.xml'), 'utf8')).toContain('<failure type="proposals.verdict"');
    const both = await runAction({ test: 'true', workflow: 'examples/pr-review.yml' }, workspace);
    expect(both.code).toBe(2);
    expect(both.stdout).toContain('::error::test runs test files, not a workflow');
  });

  it('resumes a run that stopped at max_turns with a raised limit, restoring the recorded inputs', async () => {
    server = await startFakeAnthropic(crashScript(0));
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
    writeFileSync(
      join(workspace, 'review.yml'),
      CRASH_WORKFLOW.replace(
        'kickoff: Check the three parts, then decide.',
        'inputs:\n  area: { type: string, required: true }\nkickoff: Check the three parts of $<< inputs.area >>, then decide.',
      ),
    );
    const key = { 'anthropic-api-key': TEST_API_KEY };
    const stopped = await runAction(
      { workflow: 'review.yml', inputs: '{ area: billing }', ...key, 'max-turns': '2', 'session-file': 'session.jsonl' },
      workspace,
    );
    expect(stopped.code, stopped.stderr).toBe(3);
    expect(stopped.outputs).toMatchObject({ status: 'limit', 'exit-code': '3' });
    const paid = server.requests.length;

    const resumed = await runAction({ 'resume-from': 'session.jsonl', ...key, 'max-turns': '40' }, workspace);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.outputs).toMatchObject({ status: 'success', 'exit-code': '0', 'session-file': 'session.jsonl' });
    expect(JSON.parse(resumed.outputs.outputs!)).toEqual({ verdict: 'ship', summary: 'verdict ship', answers: 'part a ok / part b ok / part c ok' });
    const session = readFileSync(join(workspace, 'session.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const calls = session.filter((e) => e.type === 'model_call').length;
    expect(server.requests.length, 'no recorded call is sent again').toBe(calls);
    expect(paid).toBeLessThan(calls);
    expect(session.find((e) => e.type === 'limits_changed')).toMatchObject({ changed: ['maxTurns'], limits: { maxTurns: 40 } });
  });

  it('park: true: a run waiting for a message batch ends the step with success and status waiting, exit-code 75; a later job resumes it', async () => {
    server = await startFakeAnthropic(reviewScript(2), { batches: { endsAfterMs: 1_500 } });
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
    writeFileSync(
      join(workspace, 'review.yml'),
      'name: parked\ndefaults: { batch: true }\nagents:\n  lead: { role: manager }\n  reviewer: { role: worker, for_each: [1, 2] }\nkickoff: "@lead go"\n',
    );
    const key = { 'anthropic-api-key': TEST_API_KEY };
    const parked = await runAction({ workflow: 'review.yml', ...key, park: 'true', 'session-file': 'session.jsonl' }, workspace);
    expect(parked.code, parked.stderr).toBe(0);
    expect(parked.outputs).toMatchObject({ status: 'waiting', 'exit-code': '75', 'session-file': 'session.jsonl' });
    let resumed = parked;
    for (let i = 0; i < 10 && resumed.outputs['exit-code'] !== '0'; i++) {
      await new Promise((r) => setTimeout(r, 1_000));
      resumed = await runAction({ 'resume-from': 'session.jsonl', ...key }, workspace);
      expect(resumed.code, resumed.stderr).toBe(0);
    }
    expect(resumed.outputs).toMatchObject({ status: 'idle', 'exit-code': '0' });
    expect(server.batches.map((b) => b.requests.length)).toEqual([1, 2, 1]);
  }, 60_000);

  it('refuses a malformed inputs map plainly', async () => {
    server = await startFakeAnthropic({});
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
    const result = await runAction({ workflow: 'x.yml', inputs: '[1, 2]', 'anthropic-api-key': TEST_API_KEY }, workspace);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('::error::the inputs input must be a map of names to values, in YAML or JSON\n');
  });

  it('typed outputs: an invalid value goes back to the lead, the corrected ones become step outputs of their own names', async () => {
    const finding = { file: 'src/app.js', line: 3, message: 'SQL built from input' };
    server = await startFakeAnthropic({
      lead: [
        { tools: [{ name: 'complete', input: { status: 'success', summary: 'reviewed', outputs: { verdict: 'maybe', findings: [finding] } } }] },
        { tools: [{ name: 'complete', input: { status: 'success', summary: 'reviewed', outputs: { verdict: 'request-changes', findings: [finding] } } }] },
      ],
    });
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
    writeFileSync(
      join(workspace, 'review.yml'),
      [
        'name: review',
        'agents:',
        '  lead: { role: manager }',
        'kickoff: Review the change.',
        'outputs:',
        '  verdict: { type: string, enum: [approve, request-changes, comment], description: The decision }',
        '  findings:',
        '    type: array',
        '    items: { type: object, properties: { file: { type: string }, line: { type: integer }, message: { type: string } }, required: [file, message] }',
        '  said: $<< result.summary >>',
        '',
      ].join('\n'),
    );
    // No key input: the job's own ANTHROPIC_API_KEY is used, not replaced by an empty one.
    const result = await runAction({ workflow: 'review.yml' }, workspace, { ANTHROPIC_API_KEY: TEST_API_KEY });
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const [first, second] = server.of('lead');
    const tool = first!.body.tools!.find((t) => t.name === 'complete') as unknown as { input_schema: { properties: { outputs: { required: string[] } } } };
    expect(tool.input_schema.properties.outputs.required).toEqual(['verdict', 'findings']);
    const refused = second!.body.messages.at(-1)!.content as { type: string; content: string; is_error?: boolean }[];
    expect(refused[0]).toMatchObject({ type: 'tool_result', is_error: true });
    expect(refused[0]!.content).toBe(
      'Not complete: outputs.verdict must be one of "approve", "request-changes", "comment". Call complete again with outputs that fit.',
    );
    expect(result.outputs).toMatchObject({ status: 'success', verdict: 'request-changes', said: 'reviewed' });
    expect(JSON.parse(result.outputs.findings!)).toEqual([finding]);
    // In the outputs JSON, a typed output is its JSON value, not a string holding JSON.
    expect(JSON.parse(result.outputs.outputs!)).toEqual({ verdict: 'request-changes', findings: [finding], said: 'reviewed' });
  });

  it('a workflow file that is not there is an ::error annotation, and exit-code 2', async () => {
    server = await startFakeAnthropic({});
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
    const result = await runAction({ workflow: 'missing.yml', 'anthropic-api-key': TEST_API_KEY }, workspace);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('::error::cannot read missing.yml: no such file\n');
    expect(result.outputs).toMatchObject({ status: 'invalid', 'exit-code': '2' });
  });

  it("coordinate, spend-pools and rate-limit reach conclave; the job's CONCLAVE_SPEND_POOLS is used when the input is left out", async () => {
    server = await startFakeAnthropic({});
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
    writeFileSync(join(workspace, 'review.yml'), 'name: r\nagents:\n  lead: { role: manager }\nkickoff: Go.\n');
    const key = { workflow: 'review.yml', 'anthropic-api-key': TEST_API_KEY };
    const pools = await runAction({ ...key, 'spend-pools': 'org=200/day, repo=20/day' }, workspace);
    expect(pools.stdout).toContain('::error::--spend-pool needs --coordinate URL');
    const fromEnv = await runAction(key, workspace, { CONCLAVE_SPEND_POOLS: 'org=200/day' });
    expect(fromEnv.stdout, 'the variable the job set, not a flag').toContain('::error::CONCLAVE_SPEND_POOLS needs --coordinate URL');
    const dead = await runAction({ ...key, coordinate: 'redis://:hunter2hunter2@127.0.0.1:1/0', 'rate-limit': 'rpm=50' }, workspace);
    expect(dead.outputs).toMatchObject({ status: 'invalid', 'exit-code': '2' });
    expect(dead.stdout).toContain('::error::--coordinate redis://***@127.0.0.1:1/0 does not answer');
    expect(dead.stdout + dead.stderr).not.toContain('hunter2hunter2');
    const badRate = await runAction({ ...key, 'rate-limit': 'rpm=lots' }, workspace);
    expect(badRate.stdout).toContain('::error::--rate-limit takes rpm=N,itpm=N,otpm=N');
    expect(server.requests).toHaveLength(0);
  });

  it.skipIf(missingStores() !== undefined)(
    'workers, queue and worker: a coordinator step runs the workflow, a worker step of another job takes its turns, only the worker has a key',
    async () => {
      server = await startFakeAnthropic({
        lead: [
          { tools: [{ name: 'run_command', input: { command: 'touch ran-here.txt' } }] },
          { tools: [{ name: 'complete', input: { status: 'success', summary: 'done on a worker' } }] },
        ],
      });
      const redis = await startRedis();
      try {
        const workflow = 'name: r\nagents:\n  lead: { role: manager, tools: [run_command] }\nkickoff: Go.\n';
        const [coordinating, working] = [mkdtempSync(join(tmpdir(), 'conclave-action-')), mkdtempSync(join(tmpdir(), 'conclave-action-'))];
        for (const dir of [coordinating, working]) writeFileSync(join(dir, 'review.yml'), workflow);
        // No queue input: both jobs of the same workflow run find the same one.
        const run = { GITHUB_RUN_ID: '42', GITHUB_RUN_ATTEMPT: '2' };
        const [coordinator, worker] = await Promise.all([
          runAction({ workers: redis.url, workflow: 'review.yml', 'workers-secret': WORKERS_SECRET }, coordinating, run),
          runAction({ workers: redis.url, worker: 'true', 'anthropic-api-key': TEST_API_KEY }, working, { ...run, CONCLAVE_WORKERS_SECRET: WORKERS_SECRET }),
        ]);
        expect(worker.stderr).toContain('conclave worker: taking turns from "run-42-2"');
        expect(coordinator.outputs, coordinator.stderr).toMatchObject({ status: 'success', 'exit-code': '0' });
        expect(worker.outputs, worker.stderr).toMatchObject({ status: 'success', 'exit-code': '0' });
        expect(worker.stderr).toContain('conclave worker: the run has ended');
        expect(worker.summary).toContain('## ✅ conclave worker: queue run-42-2');
        expect(worker.summary).toContain(
          "Took 1 turn; the run it served has ended. The run's transcript, usage and cost are in the coordinator job's summary.",
        );
        expect(readdirSync(working)).toContain('ran-here.txt');
        expect(readdirSync(coordinating)).not.toContain('ran-here.txt');
        expect(coordinator.summary).toContain('done on a worker');
        // Masked: told to GitHub once (::add-mask::), never printed otherwise.
        const printed = (coordinator.stdout + coordinator.stderr + worker.stdout + worker.stderr).split('\n').filter((l) => !l.startsWith('::add-mask::'));
        expect(printed.join('\n')).not.toContain(WORKERS_SECRET);
        const alone = await runAction({ worker: 'true' }, working);
        expect(alone.stdout).toContain('::error::worker: true needs the workers input');
      } finally {
        await redis.kill();
      }
    },
    60_000,
  );

  it('runs on Bedrock with the provider input and the credentials configure-aws-credentials left in the job, no Anthropic key', async () => {
    server = await startFakeAnthropic({ lead: [{ tools: [{ name: 'complete', input: { status: 'success', summary: 'done on bedrock' } }] }] });
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
    writeFileSync(join(workspace, 'review.yml'), 'name: r\nagents:\n  lead: { role: manager, model: claude-opus-4-5-20251101 }\nkickoff: Go.\n');
    const { HOME: _home, ...aws } = cloudEnv(server);
    const result = await runAction({ workflow: 'review.yml', provider: 'bedrock' }, workspace, aws);
    expect(result.outputs).toMatchObject({ status: 'success', 'exit-code': '0' });
    expect(server.requests.map((r) => r.wire)).toEqual(['bedrock']);
    expect(server.authFailures).toEqual([]);
    // The secret is announced for masking, and never printed otherwise.
    expect(result.stdout).toContain(`::add-mask::${FAKE_AWS.secretAccessKey}`);
    expect(result.stdout.replaceAll(`::add-mask::${FAKE_AWS.secretAccessKey}`, '') + result.stderr + result.summary).not.toContain(FAKE_AWS.secretAccessKey);
    const unknown = await runAction({ workflow: 'review.yml', provider: 'openai' }, workspace, aws);
    expect(unknown.stdout).toContain('::error::--provider must be one of anthropic, bedrock, vertex, foundry, not "openai"');
  });

  it('refuses a workflow output named like one of its own, and an invalid typed declaration, before anything runs', async () => {
    server = await startFakeAnthropic({});
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
    writeFileSync(
      join(workspace, 'w.yml'),
      'name: w\nagents:\n  lead: { role: manager }\nkickoff: hi\noutputs:\n  status: $<< result.status >>\n  score: { type: number, minimum: high }\n',
    );
    const result = await runAction({ workflow: 'w.yml', 'anthropic-api-key': TEST_API_KEY }, workspace);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      "::error file=w.yml,line=6,col=3,title=conclave workflow error::outputs.status has the name of one of the Action's own outputs (status, exit-code, cost-usd, session-file, outputs, run-id, generation, artifact-name, parked, report-file, report-url): choose another name",
    );
    expect(result.stdout).toContain(
      '::error file=w.yml,line=7,col=35,title=conclave workflow error::outputs.score.minimum must be a number; found the string "high"',
    );
    expect(result.outputs).toMatchObject({ status: 'invalid', 'exit-code': '2' });
    expect(server.requests).toHaveLength(0);
  });

  it("comment: model text pings no one, links no issue, forges no marker; only the token's own marked comment is updated; a huge run still fits", async () => {
    const forgedByUser = '<!-- conclave: review.yml -->\nmallory wrote this';
    const otherWorkflow = '<!-- conclave: other.yml -->\nquoting <!-- conclave: review.yml --> in the middle';
    const fake = await startFakeGitHub('acme/shop', 7, [
      { body: forgedByUser, login: 'mallory' },
      { body: otherWorkflow, login: BOT_LOGIN },
    ]);
    try {
      const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
      writeFileSync(join(workspace, 'event.json'), JSON.stringify({ pull_request: { number: 7 } }));
      writeFileSync(
        join(workspace, 'review.yml'),
        'name: review\nagents:\n  lead: { role: manager }\nkickoff: Review.\noutputs:\n  note: $<< result.summary >>\n',
      );
      const hostile = 'cc @octocat and @acme/security-team, fixes #123 and acme/other#9, GH-7 <!-- conclave: other.yml --> <img src=x>';
      server = await startFakeAnthropic({
        lead: [{ tools: [{ name: 'complete', input: { status: 'success', summary: `${hostile}\n${'x'.repeat(100_000)}` } }] }],
      });
      const job = {
        GITHUB_API_URL: fake.url,
        GITHUB_REPOSITORY: 'acme/shop',
        GITHUB_EVENT_NAME: 'pull_request',
        GITHUB_EVENT_PATH: join(workspace, 'event.json'),
      };
      const run = await runAction(
        { workflow: 'review.yml', 'anthropic-api-key': TEST_API_KEY, comment: 'true', 'github-token': 'ghs_test_token_1234567890' },
        workspace,
        job,
      );
      expect(run.code, run.stderr + run.stdout).toBe(0);
      // The bot's comment: the workflow's marker, the run's, then the heading.
      expect(fake.comments.map((c) => c.body.replace(/\n<!-- conclave run: [\w-]+ -->/, '').slice(0, 40))).toEqual([
        forgedByUser.slice(0, 40),
        otherWorkflow.slice(0, 40),
        '<!-- conclave: review.yml -->\n### ✅ conc',
      ]);
      const body = fake.comments[2]!.body;
      expect(body.length).toBeLessThanOrEqual(65_536);
      const table = body.split('\n').find((l) => l.startsWith('| note |'))!;
      for (const live of ['@octocat', '@acme/security', '#123', 'other#9', 'GH-7', '<!--', '<img']) expect(table).not.toContain(live);
      expect(table).toContain('@\u200boctocat');
      // Outside code blocks (where GitHub renders HTML) the marker stands once, first.
      const outside = body.replace(/(`{3,})text\n[\s\S]*?\n\1(?=\n)/g, '');
      expect(outside.indexOf('<!-- conclave:')).toBe(0);
      expect(outside.lastIndexOf('<!-- conclave:')).toBe(0);
    } finally {
      await fake.close();
    }
  });

  it('comment: true keeps one comment on the pull request up to date, through the REST API at GITHUB_API_URL', async () => {
    const fake = await startFakeGitHub('acme/shop', 7, ['a reviewer wrote this']);
    try {
      const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-'));
      mkdirSync(join(workspace, 'src'));
      writeFileSync(join(workspace, 'src', 'app.js'), 'one\ntwo\nthree\n');
      writeFileSync(join(workspace, 'event.json'), JSON.stringify({ pull_request: { number: 7 } }));
      writeFileSync(
        join(workspace, 'review.yml'),
        'name: review\nagents:\n  lead: { role: manager, tools: [annotate] }\nkickoff: Review.\noutputs:\n  verdict: { type: string, enum: [approve, reject] }\n',
      );
      const script = (verdict: string) => ({
        lead: [
          { tools: [{ name: 'annotate', input: { path: 'src/app.js', line: 2, level: 'warning', message: 'two is suspicious' } }] },
          { tools: [{ name: 'complete', input: { status: 'success', summary: 'done', outputs: { verdict } } }] },
        ],
      });
      const job = {
        GITHUB_API_URL: fake.url,
        GITHUB_REPOSITORY: 'acme/shop',
        GITHUB_EVENT_NAME: 'pull_request',
        GITHUB_EVENT_PATH: join(workspace, 'event.json'),
      };
      const inputs = {
        workflow: 'review.yml',
        'anthropic-api-key': TEST_API_KEY,
        comment: 'true',
        'github-token': 'ghs_test_token_1234567890',
        sarif: 'findings.sarif',
      };

      server = await startFakeAnthropic(script('reject'));
      const first = await runAction(inputs, workspace, job);
      expect(first.code, first.stderr + first.stdout).toBe(0);
      expect(fake.comments).toHaveLength(2);
      const mine = fake.comments[1]!;
      expect(mine.body).toContain('<!-- conclave: review.yml -->');
      expect(mine.body).toContain('**success**: @\u200blead completed the run');
      expect(mine.body).toContain('| verdict | reject |');
      expect(mine.body).toContain('- **warning** `src/app.js:2` two is suspicious');
      expect(mine.body).toMatch(/Cost: \$0\.\d{4} · 2 model calls · 1 turns/);
      expect(first.stdout).toContain(`conclave: the pull request comment is at ${mine.html_url}`);
      expect(first.stdout).toContain('::add-mask::ghs_test_token_1234567890');
      const sarif = JSON.parse(readFileSync(join(workspace, 'findings.sarif'), 'utf8'));
      expect(sarifValidator()(sarif)).toEqual([]);
      expect(sarif.runs[0].results[0]).toMatchObject({ level: 'warning', message: { text: 'two is suspicious' } });
      expect(first.stdout).toContain('::warning file=src/app.js,line=2,endLine=2::two is suspicious\n');

      await server.close();
      server = await startFakeAnthropic(script('approve'));
      const second = await runAction(inputs, workspace, job);
      expect(second.code, second.stderr).toBe(0);
      expect(fake.comments, 'the same comment, updated').toHaveLength(2);
      expect(fake.comments[0]!.body).toBe('a reviewer wrote this');
      expect(fake.comments[1]!.body).toContain('| verdict | approve |');
      expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(
        [
          'POST /graphql',
          'GET /repos/acme/shop/issues/7/comments',
          'POST /repos/acme/shop/issues/7/comments',
          'POST /graphql',
          'GET /repos/acme/shop/issues/7/comments',
          'PATCH /repos/acme/shop/issues/103',
        ].map((r) => r.replace('issues/103', `issues/comments/${mine.id}`)),
      );
      expect(fake.requests.every((r) => r.authorization?.endsWith('ghs_test_token_1234567890'))).toBe(true);

      // A token GitHub refuses: a warning, and the run's own result stands.
      await server.close();
      server = await startFakeAnthropic(script('approve'));
      const refused = await runAction({ ...inputs, 'github-token': 'not-a-token' }, workspace, job);
      expect(refused.code).toBe(0);
      expect(refused.stdout).toMatch(/::warning::conclave could not comment on the pull request: Bad credentials/);
    } finally {
      await fake.close();
    }
  });
});
