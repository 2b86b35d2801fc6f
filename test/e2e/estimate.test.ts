import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { PAIR, runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';
import { CASE_FILES, ESTIMATE_CASES } from '../fixtures/estimate-cases.js';

/**
 * `conclave estimate` and `--max-estimate-usd` (issue 55): what a run will cost before it runs,
 * checked against recorded runs of 25 shapes, with only the free token-counting endpoint called.
 */
interface EstimateJson {
  worst_usd: number;
  likely_usd: number;
  worst_bound: string;
  per_item_usd: number;
  agents: { name: string; kind: string; instances: number | null; worst_usd: number; likely_usd: number; calls: number; counted: string; turns_from: string }[];
}

const envOf = (server: FakeAnthropic) => ({ ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY });

async function estimate(server: FakeAnthropic, dir: string, args: string[] = []): Promise<EstimateJson & { stderr: string }> {
  const result = await conclave(['estimate', 'workflow.yml', '--json', ...args], { cwd: dir, env: envOf(server) });
  expect(result.code, result.stderr).toBe(0);
  return { ...(JSON.parse(result.stdout) as EstimateJson), stderr: result.stderr };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;

describe('conclave estimate against recorded runs of 25 shapes', () => {
  const measured: { name: string; recorded: number; worst: number; likely: number; fromSession: number }[] = [];

  // Concurrent: each case with its own expect and onTestFinished, so that its end closes only its own servers.
  it.concurrent.for(ESTIMATE_CASES)(
    '$name: the worst case is never below the recorded cost',
    async (c, { expect, onTestFinished }) => {
      // Each case is run twice: the estimate from the first run's session is checked against the second run.
      const runs = [];
      const servers: FakeAnthropic[] = [];
      onTestFinished(() => Promise.all(servers.map((s) => s.close())));
      for (let i = 0; i < 2; i++) {
        const server = await startFakeAnthropic(c.script, { promptCache: {}, ...(c.batches ? { batches: { endsAfterMs: 100 } } : {}) });
        servers.push(server);
        const run = await runWorkflow(server, c.workflow, [], { files: { ...CASE_FILES, ...c.files } });
        expect(run.code, `${c.name}: ${run.stderr.slice(-2000)}`).toBe(0);
        runs.push({ run, server });
      }
      const [first, second] = runs as [(typeof runs)[0], (typeof runs)[0]];
      const messageRequests = second.server.requests.length;
      const fresh = await estimate(second.server, second.run.dir);
      const fromSession = await estimate(second.server, second.run.dir, ['--from', join(first.run.dir, first.run.json.session as string)]);
      // Only the token-counting endpoint was asked: no message request beyond the run's own.
      expect(second.server.counts.length).toBeGreaterThan(0);
      expect(second.server.requests.length).toBe(messageRequests);

      const usage = second.run.json.usage as { cost_usd: number };
      const agents = second.run.json.agents as Record<string, { cost_usd: number }>;
      for (const e of [fresh, fromSession]) {
        expect(e.worst_usd).toBeGreaterThanOrEqual(usage.cost_usd);
        expect(e.likely_usd).toBeLessThanOrEqual(e.worst_usd);
        // Each row's worst case covers what its agents spent: a for_each's instances, a template's spawns.
        for (const row of e.agents) {
          const spent = Object.entries(agents)
            .filter(([name]) => name === row.name || new RegExp(`^${row.name}-[0-9]+$`).test(name))
            .reduce((sum, [, a]) => sum + a.cost_usd, 0);
          expect(row.worst_usd, `${c.name}: ${row.name}`).toBeGreaterThanOrEqual(spent);
          expect(row.counted, e.stderr).toBe('exact');
        }
      }
      const called = new Set(first.run.events.filter((e) => e.type === 'model_call').map((e) => String(e.agent).replace(/-[0-9]+$/, '')));
      for (const row of fromSession.agents) expect(row.turns_from, `${c.name}: ${row.name}`).toBe(called.has(row.name) ? 'sessions' : 'messages');
      measured.push({ name: c.name, recorded: usage.cost_usd, worst: fresh.worst_usd, likely: fresh.likely_usd, fromSession: fromSession.likely_usd });
    },
    120_000,
  );

  it('the likely cost is within 25% at the median with one earlier session, and within a factor of 2 with none', () => {
    expect(measured).toHaveLength(ESTIMATE_CASES.length);
    const withSession = median(measured.map((m) => Math.abs(m.fromSession / m.recorded - 1)));
    const fresh = median(measured.map((m) => Math.max(m.likely / m.recorded, m.recorded / m.likely)));
    console.log(
      measured.map((m) => `${m.name}: recorded ${m.recorded.toFixed(5)} likely ${m.likely.toFixed(5)} from session ${m.fromSession.toFixed(5)}`).join('\n'),
      `\nmedian error with a session ${(withSession * 100).toFixed(1)}%, median factor with none ${fresh.toFixed(2)}`,
    );
    expect(withSession).toBeLessThanOrEqual(0.25);
    expect(fresh).toBeLessThanOrEqual(2);
    // A lead's reports that come back together wake it once (wake: all, as conclave's fan-in does): a 1+N for_each within a factor of 2 too.
    for (const m of measured.filter((c) => /each/.test(c.name))) expect(Math.max(m.likely / m.recorded, m.recorded / m.likely), m.name).toBeLessThanOrEqual(2);
  });
});

describe('conclave estimate', () => {
  it('a 1+256 fan-out: only token-counting requests, 9 of them, and the fan-out shown with its items', async () => {
    const server = await startFakeAnthropic({});
    onTestFinished(() => server.close());
    const dir = mkdtempSync(join(tmpdir(), 'conclave-estimate-'));
    const items = Array.from({ length: 256 }, (_, i) => `src/file${i + 1}.js`);
    writeFileSync(
      join(dir, 'workflow.yml'),
      `name: wide\nlimits: { max_agents: 257 }\nagents:\n  lead: { role: manager }\n  reviewer:\n    role: worker\n    for_each: [${items.join(', ')}]\n` +
        `    system: Review $<< item >> only.\nkickoff: Review every file.\n`,
    );
    const started = Date.now();
    const e = await estimate(server, dir);
    const ms = Date.now() - started;
    console.log(`estimate of a 1+256 fan-out: ${ms} ms (the process's start included)`);
    expect(ms).toBeLessThan(20_000); // a bound that catches a hang; the measured figure is printed above
    expect(server.requests).toHaveLength(0);
    expect(server.counts).toHaveLength(9);
    const reviewers = e.agents.find((r) => r.name === 'reviewer')!;
    expect(reviewers).toMatchObject({ kind: 'for_each', instances: 256, calls: 256, counted: 'exact' });
    // The kickoff, then the 256 reports together: conclave's fan-in wakes the lead once for them.
    expect(e.agents.find((r) => r.name === 'lead')).toMatchObject({ calls: 2 });
  });

  it('--no-setup shows a for_each over setup output per item; text and markdown say so; a session of another workflow is refused', async () => {
    const server = await startFakeAnthropic({});
    onTestFinished(() => server.close());
    const dir = mkdtempSync(join(tmpdir(), 'conclave-estimate-'));
    writeFileSync(
      join(dir, 'workflow.yml'),
      'name: files\nsetup:\n  - { id: files, run: "exit 1" }\nagents:\n  lead: { role: manager }\n  reviewer:\n    role: worker\n' +
        '    for_each: $<< lines(setup.files) >>\nkickoff: Review.\n',
    );
    const e = await estimate(server, dir, ['--no-setup']);
    expect(e.agents.find((r) => r.name === 'reviewer')).toMatchObject({ instances: null });
    expect(e.per_item_usd).toBeGreaterThan(0);
    const env = envOf(server);
    const text = await conclave(['estimate', 'workflow.yml', '--no-setup'], { cwd: dir, env });
    expect(text.stdout).toMatch(/reviewer .* \(per item: items unknown without setup\)/);
    expect(text.stdout).toMatch(/^plus \$[0-9.]+ likely per item of a for_each whose items are unknown/m);
    const markdown = await conclave(['estimate', 'workflow.yml', '--no-setup', '--format', 'markdown'], { cwd: dir, env });
    expect(markdown.stdout).toMatch(/^\| reviewer \| \$[0-9.]+ \| \$[0-9.]+ \| 1 \|/m);
    // With setup, the failing step is the user's error: one sentence, exit 2.
    const failed = await conclave(['estimate', 'workflow.yml'], { cwd: dir, env });
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toMatch(/setup step "files" exited with code 1/);
    expect(failed.stderr).not.toMatch(/\n\s+at /);
    writeFileSync(join(dir, 'other.jsonl'), readFileSync('examples/pr-review.session.jsonl'));
    const other = await conclave(['estimate', 'workflow.yml', '--no-setup', '--from', 'other.jsonl'], { cwd: dir, env });
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/--from other\.jsonl is a session of the workflow "pr-review", not of "files"/);
    // --provider and --batch are checked as a run checks them: a run refused for them has no estimate, nothing counted.
    const counted = server.counts.length;
    writeFileSync(join(dir, 'batched.yml'), 'name: b\nagents:\n  lead: { role: manager, batch: true }\nkickoff: Go.\n');
    for (const flags of [
      ['--provider', 'bedrock'],
      ['--provider', 'nowhere'],
    ]) {
      const refused = await conclave(['estimate', 'batched.yml', '--no-setup', ...flags], { cwd: dir, env });
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toMatch(flags[1] === 'bedrock' ? /agents\.lead sends its calls as a message batch/ : /--provider must be one of/);
    }
    expect(server.counts).toHaveLength(counted);
  });
});

describe('run --max-estimate-usd', () => {
  it('below the likely cost: exit 3 and no message request at all; raised on resume, the run goes on; the job summary opens with the estimate', async () => {
    const server = await startFakeAnthropic({ lead: [{ text: '@helper check the README' }, { text: '' }], helper: [{ text: '@lead checked' }] });
    onTestFinished(() => server.close());
    const refused = await runWorkflow(server, PAIR(), ['--max-estimate-usd', '0.001']);
    expect(refused.code, refused.stderr).toBe(3);
    expect(refused.json).toMatchObject({ status: 'limit', paid_usd: 0 });
    expect(refused.json.reason).toMatch(/^limit reached: max_estimate_usd \(likely \$[0-9.]+ > \$0\.001; at most \$5\.00\): the run did not start/);
    expect(server.requests).toHaveLength(0);
    expect(server.counts.length).toBe(2);
    expect(refused.events.map((e) => e.type)).toEqual(['run_started', 'estimate', 'run_ended']);
    const session = refused.json.session as string;
    const env = envOf(server);
    const again = await conclave(['resume', session, '--json'], { cwd: refused.dir, env });
    expect(again.code).toBe(3);
    expect(server.requests).toHaveLength(0);
    const summary = join(refused.dir, 'summary.md');
    const raised = await conclave(['resume', session, '--json', '--max-estimate-usd', '1'], {
      cwd: refused.dir,
      env: { ...env, GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary },
    });
    expect(raised.code, raised.stderr).toBe(0);
    expect(server.requests.length).toBe(3);
    // Counted once: the resume compared the recorded estimate with the raised ceiling.
    expect(server.counts.length).toBe(2);
    const lines = readFileSync(summary, 'utf8').split('\n');
    expect(lines.findIndex((l) => l === '### Estimate before the run')).toBeLessThan(6);
    expect(lines.some((l) => /^\| helper \| \$[0-9.]+ \| \$5\.00 \| 1 \|/.test(l))).toBe(true);
  });
});

describe('conclave estimate on the examples', () => {
  const INPUTS: Record<string, string[]> = {
    'issue-triage.yml': ['-i', 'issue=7', '-i', 'repo=octo/app'],
    'release-notes.yml': ['-i', 'from=v1.0.0', '-i', 'version=1.1.0'],
    'pr-review.yml': ['-i', 'pr=42'],
  };
  it.each(['issue-triage.yml', 'migration-plan.yml', 'pr-review.yml', 'release-notes.yml', 'review-each-file.yml', 'review-per-file.yml'])(
    'examples/%s (--no-setup): a worst case above a likely cost above nothing',
    async (file) => {
      const server = await startFakeAnthropic({});
      onTestFinished(() => server.close());
      const result = await conclave(['estimate', `examples/${file}`, '--no-setup', '--json', ...(INPUTS[file] ?? [])], { env: envOf(server) });
      expect(result.code, result.stderr).toBe(0);
      const e = JSON.parse(result.stdout) as EstimateJson;
      expect(e.likely_usd + e.per_item_usd).toBeGreaterThan(0);
      expect(e.worst_usd).toBeGreaterThanOrEqual(e.likely_usd);
      expect(server.requests).toHaveLength(0);
    },
  );

  it('examples/pr-review.yml against its recorded session: the worst case above the recorded cost, the likely one within 25% of it', async () => {
    const server = await startFakeAnthropic({});
    onTestFinished(() => server.close());
    const recorded = readFileSync('examples/pr-review.session.jsonl', 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; cost_usd?: number })
      .filter((e) => e.type === 'model_call')
      .reduce((sum, e) => sum + (e.cost_usd ?? 0), 0);
    const result = await conclave(['estimate', 'examples/pr-review.yml', '--no-setup', '--json', '--from', 'examples/pr-review.session.jsonl'], {
      env: envOf(server),
    });
    expect(result.code, result.stderr).toBe(0);
    const e = JSON.parse(result.stdout) as EstimateJson;
    console.log(`pr-review: recorded $${recorded.toFixed(5)}, likely $${e.likely_usd.toFixed(5)}, worst $${e.worst_usd}`);
    expect(e.worst_usd).toBeGreaterThanOrEqual(recorded);
    expect(Math.abs(e.likely_usd / recorded - 1)).toBeLessThanOrEqual(0.25);
  });
});

describe('the estimate before the run, when the API does not answer', () => {
  it('a budget that binds is named as the bound, with one agent too (whose own worst is already capped at it)', async () => {
    const server = await startFakeAnthropic({});
    onTestFinished(() => server.close());
    for (const agents of ['  lead: { role: manager }\n', '  lead: { role: manager }\n  helper: { role: worker }\n']) {
      const dir = mkdtempSync(join(tmpdir(), 'conclave-estimate-bound-'));
      writeFileSync(join(dir, 'workflow.yml'), `name: bound\nlimits: { budget_usd: 0.05 }\nagents:\n${agents}kickoff: Start.\n`);
      const json = await estimate(server, dir);
      expect(json.worst_bound).toBe('budget_usd');
      expect(json.worst_usd).toBe(0.05);
      const text = await conclave(['estimate', 'workflow.yml'], { cwd: dir, env: envOf(server) });
      expect(text.stdout).toContain('at most $0.05 (bounded by limits.budget_usd)');
    }
  });

  it('a token count that hangs ends with the run at its timeout: exit 3, no estimate noted, no message request', async () => {
    const server = await startFakeAnthropic({ lead: [{ text: 'never asked' }] }, { latencyMs: 60_000 });
    onTestFinished(() => server.close());
    const started = Date.now();
    const run = await runWorkflow(server, PAIR(), ['--max-estimate-usd', '5', '--timeout', '2s']);
    expect(run.code, run.stderr).toBe(3);
    expect(run.json.reason).toMatch(/^limit reached: timeout/);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(server.requests).toHaveLength(0);
    expect(run.events.map((e) => e.type)).not.toContain('estimate');
  }, 30_000);
});
