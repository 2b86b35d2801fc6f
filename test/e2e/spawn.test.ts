import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { BIN, conclave } from '../helpers/cli.js';
import { channelOf, runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

const TEAM = (limits = '') => `
name: per-file-review
${limits}
defaults: { max_tokens: 2048 }
agents:
  lead:
    role: manager
    spawns: [reviewer]
templates:
  reviewer:
    description: reviews one file
    system: Review the file you are given. Answer with one line.
kickoff: Review a.ts, b.ts and c.ts.
`;

const spawnCall = (tasks: string[], template = 'reviewer') => ({ tools: [{ name: 'spawn', input: { template, tasks } }] });
let server: FakeAnthropic;
afterEach(() => server?.close());
const env = () => ({ ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY });

describe('spawn', () => {
  it('starts one agent per task in one call; they run at once; the spawner is woken once with every answer', async () => {
    server = await startFakeAnthropic({
      lead: [spawnCall(['Review a.ts', 'Review b.ts', 'Review c.ts']), { text: 'Spawned.' }, { text: 'All three reviewed.' }],
      'reviewer-1': [{ text: 'a.ts: fine' }],
      'reviewer-2': [{ text: 'b.ts: one bug' }],
      'reviewer-3': [{ text: 'c.ts: fine' }],
    });
    const run = await runWorkflow(server, TEAM());
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.status).toBe('idle');
    // The lead's first turn: the spawn, then its reply; then one turn with the three answers.
    expect(server.of('lead')).toHaveLength(3);
    const woken = JSON.stringify(server.of('lead')[2]!.body.messages.at(-1));
    for (const answer of ['a.ts: fine', 'b.ts: one bug', 'c.ts: fine']) expect(woken).toContain(answer);
    // The spawn's result names the instances.
    expect(JSON.stringify(server.of('lead')[1]!.body.messages.at(-1))).toContain('Started @reviewer-1, @reviewer-2, @reviewer-3');
    // Each instance got its task, from the lead, with the template's instructions.
    for (const [i, file] of ['a.ts', 'b.ts', 'c.ts'].entries()) {
      const request = server.of(`reviewer-${i + 1}`)[0]!;
      expect(JSON.stringify(request.body.messages[0])).toContain(`[from @lead]\\nReview ${file}`);
      expect(JSON.stringify(request.body.system)).toContain('Review the file you are given.');
    }
    const spawned = run.events.filter((e) => e.type === 'agent_spawned');
    expect(spawned.map((e) => [e.agent, e.template, e.parent, e.depth])).toEqual([
      ['reviewer-1', 'reviewer', 'lead', 1],
      ['reviewer-2', 'reviewer', 'lead', 1],
      ['reviewer-3', 'reviewer', 'lead', 1],
    ]);
    // The three ran at once: each was asked before any answered.
    const asked = [1, 2, 3].map((i) => server.of(`reviewer-${i}`)[0]!.receivedAt);
    expect(Math.max(...asked) - Math.min(...asked)).toBeLessThan(1000);
    expect(channelOf(run).filter(([sender]) => sender.startsWith('reviewer-')).map(([, to]) => to)).toEqual([['lead'], ['lead'], ['lead']]);
    expect(Object.keys(run.json.agents as object)).toEqual(['lead', 'reviewer-1', 'reviewer-2', 'reviewer-3']);
  });

  it('refuses a spawn past limits.max_agents or limits.max_depth, or of a template the agent may not spawn, as a tool error', async () => {
    server = await startFakeAnthropic({
      lead: [spawnCall(['one', 'two', 'three']), spawnCall(['x'], 'other'), spawnCall(['one']), { text: 'ok' }, { text: 'done' }],
      'reviewer-1': [spawnCall(['deeper'])],
      'reviewer-1b': [],
    });
    const workflow = TEAM('limits: { max_agents: 3, max_depth: 1 }').replace('system: Review', 'spawns: [reviewer]\n    system: Review');
    const run = await runWorkflow(server, workflow, [], {});
    const results = run.events.filter((e) => e.type === 'tool_result').map((e) => [e.agent, e.content, e.is_error]);
    expect(results).toContainEqual(['lead', 'spawn refused: limits.max_agents is 3 and the run has 1 agents; 3 more would pass it', true]);
    expect(results).toContainEqual(['lead', 'you may spawn "reviewer", not "other"', true]);
    expect(results).toContainEqual(['reviewer-1', 'spawn refused: limits.max_depth is 1, and agents you spawn would be 2 levels deep', true]);
  });

  it('validate names a spawns entry that is no template, and an agent named like an instance', async () => {
    const dir = (await runWorkflow((server = await startFakeAnthropic({})), 'name: x\nagents: { a: { role: manager } }\nkickoff: k\n')).dir;
    writeFileSync(join(dir, 'bad.yml'), TEAM().replace('spawns: [reviewer]', 'spawns: [reviewr]').replace('agents:\n', 'agents:\n  reviewer-2: { role: worker }\n'));
    const result = await conclave(['validate', 'bad.yml'], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stdout + result.stderr).toContain('agents.lead.spawns[0] names "reviewr", which is not a template (did you mean "reviewer"?)');
    expect(result.stdout + result.stderr).toContain('agent "reviewer-2" has the name of an instance of template "reviewer"');
  });

  it('resume after the run stopped mid-fan-out: no spawn repeated, no recorded call made again, the same names', async () => {
    server = await startFakeAnthropic({
      lead: [spawnCall(['Review a.ts', 'Review b.ts']), { text: 'Spawned.' }, { text: 'Both reviewed.' }],
      'reviewer-1': [{ text: 'a.ts: fine' }],
      'reviewer-2': [{ error: { status: 400, type: 'invalid_request_error' } }, { text: 'b.ts: fine' }],
    });
    const run = await runWorkflow(server, TEAM());
    expect(run.code).toBe(1);
    const before = server.requests.length;
    const resumed = await conclave(['resume', join(run.dir, String(run.json.session)), '--json'], { cwd: run.dir, env: env() });
    expect(resumed.code, resumed.stderr).toBe(0);
    // Only reviewer-2's failed call and the lead's last turn are made again.
    expect(server.requests.slice(before).map((r) => r.agent)).toEqual(['reviewer-2', 'lead']);
    const lines = readFileSync(join(run.dir, String(run.json.session)), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.filter((e) => e.type === 'agent_spawned').map((e) => e.agent)).toEqual(['reviewer-1', 'reviewer-2']);
    // The replay of the whole session, with no network, gives the same end.
    const replay = await conclave(['run', 'workflow.yml', '--replay', String(run.json.session), '--json'], { cwd: run.dir, env: { ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout).agents).toHaveProperty('reviewer-2');
  });

  it('kill -9 while spawned agents are mid-call, then resume: no extra spawn, no recorded call made again', async () => {
    server = await startFakeAnthropic({
      lead: [spawnCall(['Review a.ts', 'Review b.ts', 'Review c.ts']), { text: 'Spawned.' }, { text: 'All three reviewed.' }],
      'reviewer-1': [{ text: 'a.ts: fine' }],
      'reviewer-2': [{ text: 'b.ts: fine' }],
      'reviewer-3': [{ text: 'c.ts: slow', delayMs: 60_000 }, { text: 'c.ts: fine' }],
    });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-spawn-kill-'));
    writeFileSync(join(dir, 'workflow.yml'), TEAM());
    const child = spawn(process.execPath, [BIN, 'run', 'workflow.yml', '--quiet'], { cwd: dir, env: { ...process.env, ...env() }, stdio: 'ignore' });
    const closed = new Promise((resolve) => child.on('close', resolve));
    const sessions = join(dir, '.conclave', 'sessions');
    const file = () => join(sessions, readdirSync(sessions).find((f) => f.endsWith('.jsonl'))!);
    const answered = () => existsSync(sessions) && readdirSync(sessions).length > 0 && (readFileSync(file(), 'utf8').match(/"type":"turn_ended","agent":"reviewer-/g) ?? []).length >= 2;
    const deadline = Date.now() + 20_000;
    while (!(answered() && server.of('reviewer-3').length === 1) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    child.kill('SIGKILL');
    await closed;
    const before = readFileSync(file(), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(before.filter((e) => e.type === 'agent_spawned')).toHaveLength(3);
    expect(before.some((e) => e.type === 'run_ended')).toBe(false);
    const sent = server.requests.length;
    const resumed = await conclave(['resume', file(), '--json'], { cwd: dir, env: env() });
    expect(resumed.code, resumed.stderr).toBe(0);
    // Only reviewer-3's call, cut by the kill, and the lead's fan-in turn go out again.
    expect(server.requests.slice(sent).map((r) => r.agent)).toEqual(['reviewer-3', 'lead']);
    const after = readFileSync(file(), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(after.filter((e) => e.type === 'agent_spawned').map((e) => e.agent)).toEqual(['reviewer-1', 'reviewer-2', 'reviewer-3']);
    expect(JSON.stringify(server.of('lead').at(-1)!.body.messages.at(-1))).toContain('c.ts: fine');
  }, 60_000);
});
