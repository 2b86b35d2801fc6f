import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY, PAIR } from '../helpers/run-workflow.js';

/**
 * Regressions a hand mutation test found that no test saw (issue 24): each test here fails when
 * the mutation it names is made to the code.
 */

let server: FakeAnthropic;
afterEach(() => server?.close());
const sessionOf = (dir: string, json: { session?: unknown }) => join(dir, String(json.session));

describe('regressions no test saw', () => {
  it('max_turns_per_agent: 2 gives an agent exactly two turns (not three)', async () => {
    server = await startFakeAnthropic({ lead: () => ({ text: '@helper once more' }), helper: () => ({ text: '@lead once more' }) });
    const run = await runWorkflow(server, PAIR('limits: { max_turns_per_agent: 2 }'));
    expect(run.code).toBe(3);
    expect(server.of('lead')).toHaveLength(2);
    expect(run.events.filter((e) => e.type === 'turn_started' && e.agent === 'lead')).toHaveLength(2);
  });

  it('a request the API refuses (400) ends with exit 1, an error, not 4, a provider outage', async () => {
    server = await startFakeAnthropic({ lead: [{ error: { status: 400, type: 'invalid_request_error' } }] });
    const run = await runWorkflow(server, PAIR());
    expect(run.json.status).toBe('error');
    expect(run.code).toBe(1);
  });

  it('a replay whose recorded acknowledgement differs ends as a divergence, in one sentence, not a stack (fuzz seed 671938)', async () => {
    server = await startFakeAnthropic({ lead: [{ text: '@helper go' }, { text: 'done' }], helper: [{ text: '@lead back' }] });
    const run = await runWorkflow(server, PAIR());
    expect(run.code, run.stderr).toBe(0);
    const session = sessionOf(run.dir, run.json);
    const lines = readFileSync(session, 'utf8').split('\n');
    const ack = lines.findIndex((l) => l.includes('"type":"ack"'));
    expect(ack).toBeGreaterThan(0);
    lines[ack] = lines[ack]!.replace(/"through":\d+/, '"through":99');
    writeFileSync(join(run.dir, 'mutated.jsonl'), lines.join('\n'));
    const replay = await conclave(['run', 'workflow.yml', '--replay', 'mutated.jsonl', '--json'], {
      cwd: run.dir,
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    const result = JSON.parse(replay.stdout);
    expect(result.reason).toMatch(/^the run differs from the session at event #\d+ \(ack/);
    expect(`${replay.stdout}${replay.stderr}`).not.toMatch(/\n\s+at .*:\d+:\d+|no turn in progress/);
  });

  it('resume: answers from the recording are not paid again, and the result says so', async () => {
    server = await startFakeAnthropic({ lead: [{ text: '@helper go' }, { text: 'done' }], helper: [{ text: '@lead back' }] });
    const run = await runWorkflow(server, PAIR('limits: { max_turns: 2 }'));
    expect(run.code).toBe(3);
    const resumed = await conclave(['resume', sessionOf(run.dir, run.json), '--max-turns', '5', '--json'], {
      cwd: run.dir,
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    const result = JSON.parse(resumed.stdout);
    expect(result.paid_usd).toBeGreaterThan(0);
    expect(result.paid_usd).toBeLessThan(result.usage.cost_usd);
    expect(server.requests).toHaveLength(3);
  });

  it('resume: a write_file that was running when the run stopped is not run again; the model is told its outcome is unknown', async () => {
    server = await startFakeAnthropic({
      lead: (request) =>
        JSON.stringify(request.body.messages).includes('tool_result')
          ? { text: 'done' }
          : { tools: [{ name: 'write_file', input: { path: 'out.txt', content: 'written once' } }] },
    });
    const run = await runWorkflow(server, PAIR().replace('lead: { role: manager }', 'lead: { role: manager, tools: [write_file] }'));
    expect(run.code).toBe(0);
    expect(readFileSync(join(run.dir, 'out.txt'), 'utf8')).toBe('written once');
    const file = sessionOf(run.dir, run.json);
    // The session as a kill -9 leaves it while the tool runs: everything after its tool_call cut.
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const cut = lines.findIndex((l) => l.includes('"type":"tool_call"'));
    writeFileSync(file, `${lines.slice(0, cut + 1).join('\n')}\n`);
    rmSync(join(run.dir, 'out.txt'));
    const resumed = await conclave(['resume', file, '--json'], { cwd: run.dir, env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    expect(existsSync(join(run.dir, 'out.txt')), 'the write is not made again').toBe(false);
    expect(JSON.stringify(server.requests.at(-1)!.body.messages)).toContain('The outcome of this write_file call is unknown');
  });
});
