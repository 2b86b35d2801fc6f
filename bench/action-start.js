// The Action from a clean checkout: action.yml and the committed action/ bundle copied into an
// empty directory (no node_modules, nothing installed), run as the runner runs a node24 action
// (INPUT_* variables, GITHUB_* files). Measured: the time from the step's start to conclave's
// first model call, against the fake Messages API.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSource } from './load-source.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export async function actionStart(rounds = 5) {
  const times = [];
  for (let i = 0; i < rounds; i++) {
    const checkout = mkdtempSync(join(tmpdir(), 'conclave-action-checkout-'));
    cpSync(join(root, 'action.yml'), join(checkout, 'action.yml'));
    cpSync(join(root, 'action'), join(checkout, 'action'), { recursive: true });
    const workspace = mkdtempSync(join(tmpdir(), 'conclave-action-workspace-'));
    writeFileSync(join(workspace, 'review.yml'), 'name: start\nagents:\n  lead: { role: manager }\nkickoff: Say hi.\n');
    mkdirSync(join(workspace, 'runner'));
    for (const f of ['output', 'summary']) writeFileSync(join(workspace, 'runner', f), '');
    let firstCall;
    const reached = new Promise((resolve) => (firstCall = resolve));
    const server = await startFakeAnthropic({ lead: () => (firstCall(performance.now()), { text: 'hi' }) });
    const started = performance.now();
    const child = spawn(process.execPath, [join(checkout, 'action', 'main.js')], {
      cwd: workspace,
      stdio: 'ignore',
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        GITHUB_ACTIONS: 'true',
        GITHUB_WORKSPACE: workspace,
        GITHUB_OUTPUT: join(workspace, 'runner', 'output'),
        GITHUB_STEP_SUMMARY: join(workspace, 'runner', 'summary'),
        ANTHROPIC_BASE_URL: server.url,
        INPUT_WORKFLOW: 'review.yml',
        'INPUT_ANTHROPIC-API-KEY': 'sk-ant-test-bench',
      },
    });
    const exited = new Promise((resolve) => child.on('close', resolve));
    times.push((await reached) - started);
    const code = await exited;
    await server.close();
    if (code !== 0) throw new Error(`the Action exited ${code}`);
  }
  return { medianMs: median(times) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await actionStart());
