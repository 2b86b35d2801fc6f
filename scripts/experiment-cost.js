// What an experiment finds and costs (docs/experiments.md): `conclave experiment` on 20 cases × 2
// versions × 5 runs on the test server, every call in batches: first one agent whose edited
// prompt makes the planted bug found 40 points less often; then a 1+4 team (a lead that spawns
// four reviewers) on Sonnet 5.5 and on Haiku 5.5, priced by conclave's table (docs/pricing.md).
// Prints the figures docs/experiments.md quotes.
//
//   node scripts/experiment-cost.js [CASES] [REPEAT]
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSource } from '../bench/load-source.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const { plantedScript, plantedTeamWorkflow, plantedTeamScript, plantedTests, plantedWorkflow, READ_PROMPT, SKIM_PROMPT } =
  await loadSource('test/fixtures/planted-bug.ts');
const cases = Number(process.argv[2] ?? 20);
const repeat = process.argv[3] ?? '5';

const found = (n) => 0.5 + (0.4 * ((n * 7) % 10)) / 10;
const shapes = [
  { name: 'one agent, 40 points less', model: 'claude-sonnet-5-5', workflow: plantedWorkflow, script: plantedScript },
  { name: '1+4 team', model: 'claude-sonnet-5-5', workflow: (prompt, model) => plantedTeamWorkflow(prompt, model), script: plantedTeamScript },
  { name: '1+4 team', model: 'claude-haiku-5-5', workflow: (prompt, model) => plantedTeamWorkflow(prompt, model), script: plantedTeamScript },
];
for (const { name, model, workflow, script } of shapes) {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-experiment-cost-'));
  const git = (...args) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir });
  writeFileSync(join(dir, 'planted.yml'), workflow(READ_PROMPT, model));
  writeFileSync(join(dir, 'planted.test.yml'), plantedTests(cases));
  writeFileSync(join(dir, '.gitignore'), '.conclave/\n');
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('commit', '-q', '-m', 'the team');
  writeFileSync(join(dir, 'planted.yml'), workflow(SKIM_PROMPT, model));
  const server = await startFakeAnthropic(script({ found, skimDrop: 0.4, seed: `${name} ${model}` }), { batches: { endsAfterMs: 200 }, promptCache: {} });
  const started = Date.now();
  const result = await new Promise((done) => {
    const child = spawn(
      process.execPath,
      [join(root, 'bin/conclave.js'), 'experiment', '--base', 'main', '--repeat', repeat, '--json', '--concurrency', '16', '-o', 'out'],
      {
        cwd: dir,
        env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-ant-test-experiment-cost' },
      },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => process.stderr.write(d));
    child.on('close', (code) => done({ code, json: JSON.parse(out) }));
  });
  const calls = server.requests.length;
  const tokens = server.requests.reduce((n, r) => n + r.bytes / 4, 0);
  await server.close();
  const { json } = result;
  const kept = JSON.parse(readFileSync(join(dir, 'out', 'experiment.json'), 'utf8'));
  console.log(
    JSON.stringify({
      name,
      model,
      exit: result.code,
      verdict: json.verdict,
      reason: json.reason,
      stage: json.stage,
      runs: json.runs,
      calls,
      batched: server.requests.filter((r) => r.batch).length,
      batches: server.batches.length,
      prompt_tokens_sent: Math.round(tokens),
      spent_usd: json.spent_usd,
      per_run_usd: Number((json.spent_usd / json.runs).toFixed(6)),
      estimate: kept.estimate,
      effect: json.primary.effect,
      interval: json.primary.interval,
      wall_s: Math.round((Date.now() - started) / 1000),
    }),
  );
}
