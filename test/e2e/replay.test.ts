import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { CRASH_WORKFLOW, crashScript } from '../fixtures/crash-team.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow } from '../helpers/run-workflow.js';

let server: FakeAnthropic;
afterEach(() => server?.close());

const NO_NETWORK = { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: '' };

async function recorded() {
  server = await startFakeAnthropic(crashScript(5));
  const run = await runWorkflow(server, CRASH_WORKFLOW);
  expect(run.code).toBe(0);
  const sessions = join(run.dir, '.conclave', 'sessions');
  return { run, file: join(sessions, readdirSync(sessions)[0]!) };
}

describe('conclave run --replay', () => {
  it('replays a recorded concurrent run with no network and no key, to identical outputs', async () => {
    const { run, file } = await recorded();
    const replay = await conclave(['run', 'workflow.yml', '--replay', file, '--json', '--session', 'replay.jsonl'], { cwd: run.dir, env: NO_NETWORK });
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({ status: 'success', outputs: run.json.outputs });
    expect(replay.stderr).toContain('@lead → @a, @b, @c: @a @b @c please check your part.');
    expect(replay.stderr).toContain('proposal verdict: decided "ship"');
    expect(readFileSync(join(run.dir, 'replay.jsonl'), 'utf8').split('\n')[0]).toContain('"note":"a replay of');
  });

  it("fails at the first request that differs, at the changed agent's first call, showing the difference", async () => {
    const { run, file } = await recorded();
    const workflow = CRASH_WORKFLOW.replace('  b: { role: worker, tools: [list_files] }', '  b: { role: worker, tools: [list_files], system: Be thorough. }');
    writeFileSync(join(run.dir, 'workflow.yml'), workflow);
    const replay = await conclave(['run', 'workflow.yml', '--replay', file, '--json', '--session', 'replay.jsonl'], { cwd: run.dir, env: NO_NETWORK });
    expect(replay.code).toBe(1);
    const result = JSON.parse(replay.stdout);
    expect(result.status).toBe('error');
    expect(result.reason).toMatch(/^the run differs from the session at event #\d+ \(model_call of @b\): request\.system: recorded …".*"…, now …".*\\n\\nYour instructions:\\nBe thorough\."…$/);
  });

  it('fails when the run asks for more than the session recorded', async () => {
    const { run, file } = await recorded();
    const lines = readFileSync(file, 'utf8').split('\n');
    const cut = lines.findIndex((l) => l.includes('"type":"proposal_opened"'));
    writeFileSync(file, `${lines.slice(0, cut - 2).join('\n')}\n`);
    const replay = await conclave(['run', 'workflow.yml', '--replay', file, '--json'], { cwd: run.dir, env: NO_NETWORK });
    expect(replay.code).toBe(1);
    expect(JSON.parse(replay.stdout).reason).toMatch(/^the session holds no response for @\w+'s turn \d+, call \d+: this run asked for more than was recorded$/);
  });
});
