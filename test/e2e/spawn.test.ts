import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { BIN, conclave } from '../helpers/cli.js';
import { CANCEL_TEAM, cancellingLead, SPAWNING_MANAGER } from '../fixtures/cancel-team.js';
import { channelOf, runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';
import { sandboxForTests } from '../helpers/sandbox.js';

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
      lead: (r) => {
        const sent = JSON.stringify(r.body.messages);
        return sent.includes('c.ts: fine')
          ? { text: 'All three reviewed.' }
          : sent.includes('Started @')
            ? { text: 'Spawned.' }
            : spawnCall(['Review a.ts', 'Review b.ts', 'Review c.ts']);
      },
      'reviewer-1': [{ text: 'a.ts: fine' }],
      'reviewer-2': [{ text: 'b.ts: one bug' }],
      'reviewer-3': [{ text: 'c.ts: fine' }, { text: 'c.ts: fine' }],
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
    expect(
      channelOf(run)
        .filter(([sender]) => sender.startsWith('reviewer-'))
        .map(([, to]) => to),
    ).toEqual([['lead'], ['lead'], ['lead']]);
    expect(Object.keys(run.json.agents as object)).toEqual(['lead', 'reviewer-1', 'reviewer-2', 'reviewer-3']);

    // resume --at crosses the spawn: a fork taken once reviewer-1 and reviewer-2 answered re-runs only
    // what came after. (They run at once: on a busy machine either may end first.)
    const answered = run.events
      .filter((e) => e.type === 'turn_ended' && (e.agent === 'reviewer-1' || e.agent === 'reviewer-2'))
      .reduce((last, e) => (e.seq > last.seq ? e : last));
    const before = server.requests.length;
    const fork = await conclave(['resume', String(run.json.session), '--at', String(answered.seq), '--out', 'fork.jsonl', '--json'], {
      cwd: run.dir,
      env: env(),
    });
    expect(fork.code, fork.stderr + fork.stdout).toBe(0);
    const forked = readFileSync(join(run.dir, 'fork.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(forked.filter((e) => e.type === 'agent_spawned').map((e) => e.agent)).toEqual(['reviewer-1', 'reviewer-2', 'reviewer-3']);
    expect(server.requests.slice(before).every((r) => r.agent === 'lead' || r.agent === 'reviewer-3')).toBe(true);
  });

  it('a burst of spawned agents leaves in slices whatever the environment holds (a leftover XSLICE=abc once held every call back)', async () => {
    const tasks = Array.from({ length: 12 }, (_, i) => `Review f${i + 1}.ts`);
    server = await startFakeAnthropic({
      lead: (r) => {
        const sent = JSON.stringify(r.body.messages);
        return sent.includes('f12.ts: fine') ? { text: 'All reviewed.' } : sent.includes('Started @') ? { text: 'Spawned.' } : spawnCall(tasks);
      },
      ...Object.fromEntries(tasks.map((_, i) => [`reviewer-${i + 1}`, [{ text: `f${i + 1}.ts: fine` }]])),
    });
    const run = await runWorkflow(server, TEAM('limits: { concurrency: 13 }'), ['--timeout', '20s'], { env: { XSLICE: 'abc' } });
    expect(run.code, run.stderr).toBe(0);
    expect(server.requests.filter((r) => r.agent.startsWith('reviewer-'))).toHaveLength(12);
  }, 30_000);

  it('refuses a spawn past limits.max_agents or limits.max_depth, or of a template the agent may not spawn, as a tool error', async () => {
    server = await startFakeAnthropic({
      lead: [
        spawnCall(['one', 'two', 'three']),
        spawnCall(['x'], 'other'),
        { tools: [{ name: 'spawn', input: { template: 'reviewer' } }] },
        spawnCall(['one']),
        { text: 'ok' },
        { text: 'done' },
      ],
      'reviewer-1': [spawnCall(['deeper'])],
      'reviewer-1b': [],
    });
    const workflow = TEAM('limits: { max_agents: 3, max_depth: 1 }').replace('system: Review', 'spawns: [reviewer]\n    system: Review');
    const run = await runWorkflow(server, workflow, [], {});
    const results = run.events.filter((e) => e.type === 'tool_result').map((e) => [e.agent, e.content, e.is_error]);
    expect(results).toContainEqual(['lead', 'spawn refused: limits.max_agents is 3 and the run has 1 agents; 3 more would pass it', true]);
    expect(results).toContainEqual(['lead', 'you may spawn "reviewer", not "other"', true]);
    expect(results).toContainEqual(['lead', 'give "tasks" (a list) or "task" (one), not both and not neither', true]);
    expect(results).toContainEqual(['reviewer-1', 'spawn refused: limits.max_depth is 1, and agents you spawn would be 2 levels deep', true]);
  });

  it('a name the model chooses never collides with an automatic one: the automatic shapes are kept, a taken name is a tool error, and the run goes on', async () => {
    const named = (name: string, task = 'x') => ({ tools: [{ name: 'spawn', input: { template: 'reviewer', task, name } }] });
    server = await startFakeAnthropic({
      lead: [
        named('reviewer-1'),
        named('lead-fork-2'),
        named('lead'),
        { tools: [{ name: 'spawn', input: { template: 'reviewer', tasks: ['a', 'b'], name: 'pair' } }] },
        named('scout', 'scout it'),
        named('scout'),
        spawnCall(['then this']),
        { text: 'Spawned.' },
        { text: 'Both answered.' },
      ],
      scout: [{ text: 'scouted' }],
      'reviewer-1': [{ text: 'reviewed' }],
    });
    const run = await runWorkflow(server, TEAM());
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/\n\s+at |internal error/);
    const results = run.events.filter((e) => e.type === 'tool_result' && e.agent === 'lead').map((e) => [e.content, e.is_error]);
    expect(results).toEqual([
      ['"reviewer-1" cannot be a new agent\'s name: names of the form TEMPLATE-N and AGENT-fork-N are kept for the names conclave gives', true],
      ['"lead-fork-2" cannot be a new agent\'s name: names of the form TEMPLATE-N and AGENT-fork-N are kept for the names conclave gives', true],
      ['"lead" cannot be a new agent\'s name: an agent has that name already', true],
      ['"name" names one agent: give one task with it', true],
      ['Started @scout. Each has its task; you will be woken when all have answered.', false],
      ['"scout" cannot be a new agent\'s name: an agent has that name already', true],
      ['Started @reviewer-1. Each has its task; you will be woken when all have answered.', false],
    ]);
    expect(run.events.filter((e) => e.type === 'agent_spawned').map((e) => e.agent)).toEqual(['scout', 'reviewer-1']);
  });

  it("a fork of a spawned agent is held to that agent's max_turns", async () => {
    // A fork keeps its parent's system prompt (the server sees @t-1): it is told apart by its first task.
    const isFork = (r: { body: { messages: unknown[] } }) => JSON.stringify(r.body.messages).includes('You are @t-1-fork-1');
    server = await startFakeAnthropic({
      lead: (r) => (r.call === 1 ? spawnCall(['x'], 't') : { text: 'ok' }),
      't-1': (r) =>
        isFork(r) ? { text: 'did it' } : r.call === 1 ? { tools: [{ name: 'fork', input: { task: 'do y' } }] } : { text: '@t-1-fork-1 and also z' },
    });
    const workflow =
      'name: f\ndefaults: { max_tokens: 1024 }\nagents:\n  lead: { role: manager, spawns: [t] }\ntemplates:\n  t: { role: manager, fork: true, limits: { max_turns: 1 } }\nkickoff: Go.\n';
    const run = await runWorkflow(server, workflow);
    expect(run.code, run.stderr).toBe(0);
    expect(server.of('t-1').filter(isFork), 'one turn, as its parent').toHaveLength(1);
    expect(run.events.find((e) => e.type === 'agent_ended' && e.agent === 't-1-fork-1')).toMatchObject({ status: 'limit' });
  });

  it("siblings under a capped spawner: a call that does not fit waits for its sibling's call in flight instead of ending the agent; a cancelled child's carve goes back", async () => {
    const sent = (r: { body: { messages: unknown[] } }) => JSON.stringify(r.body.messages);
    server = await startFakeAnthropic({
      lead: (r) => (r.call === 1 ? { tools: [{ name: 'spawn', input: { template: 'boss', task: 'plan', budget_usd: 1 } }] } : { text: 'ok' }),
      'boss-1': (r) =>
        r.call === 1
          ? { tools: [{ name: 'spawn', input: { template: 'worker', tasks: ['a', 'b'] } }] }
          : r.call === 2
            ? { tools: [{ name: 'spawn', input: { template: 'carved', task: 'c', budget_usd: 0.9 } }] }
            : r.call === 3
              ? { tools: [{ name: 'cancel', input: { agent: 'carved-1' } }] }
              : r.call === 4
                ? { tools: [{ name: 'spawn', input: { template: 'carved', task: 'd', budget_usd: 0.9 } }] }
                : { text: sent(r).includes('Started @carved-2') ? 'spawned again' : 'done' },
      'worker-1': () => ({ text: 'a done', delayMs: 300 }),
      'worker-2': () => ({ text: 'b done', delayMs: 300 }),
      'carved-1': () => ({ text: 'c done', delayMs: 2000 }),
      'carved-2': () => ({ text: 'd done' }),
    });
    // Each worker's call may cost up to ~$0.60 (40,000 output tokens at $15 a million): two at once do not fit $1.
    const workflow = `
name: siblings
defaults: { max_tokens: 1024, model: claude-sonnet-4-5 }
agents:
  lead: { role: manager, spawns: [boss] }
templates:
  boss: { role: manager, spawns: [worker, carved] }
  worker: { max_tokens: 40000 }
  carved: {}
kickoff: Go.
`;
    const run = await runWorkflow(server, workflow);
    expect(run.code, run.stderr).toBe(0);
    expect(
      run.events.filter((e) => e.type === 'agent_ended' && e.status === 'limit'),
      "no agent ended by its sibling's worst case",
    ).toEqual([]);
    expect(server.of('worker-1')).toHaveLength(1);
    expect(server.of('worker-2')).toHaveLength(1);
    const [first, second] = [server.of('worker-1')[0]!, server.of('worker-2')[0]!].sort((x, y) => x.receivedAt - y.receivedAt);
    expect(second!.receivedAt, 'the second call waited for the first').toBeGreaterThanOrEqual(first!.answeredAt!);
    // $0.90 carved for carved-1, cancelled having spent little: the next $0.90 fits what comes back.
    const spawns = run.events.filter((e) => e.type === 'tool_result' && e.tool === 'spawn' && e.agent === 'boss-1').map((e) => e.content);
    expect(spawns.at(-1)).toBe('Started @carved-2. Each has its task; you will be woken when all have answered.');
  }, 30_000);

  it('validate names a spawns entry that is no template, and an agent named like an instance', async () => {
    const dir = (await runWorkflow((server = await startFakeAnthropic({})), 'name: x\nagents: { a: { role: manager } }\nkickoff: k\n')).dir;
    writeFileSync(
      join(dir, 'bad.yml'),
      TEAM().replace('spawns: [reviewer]', 'spawns: [reviewr]').replace('agents:\n', 'agents:\n  reviewer-2: { role: worker }\n'),
    );
    const result = await conclave(['validate', 'bad.yml'], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stdout + result.stderr).toContain('agents.lead.spawns[0] names "reviewr", which is not a template (did you mean "reviewer"?)');
    expect(result.stdout + result.stderr).toContain('agent "reviewer-2" has the name of an instance of "reviewer"');
    writeFileSync(join(dir, 'self.yml'), TEAM().replace('system: Review', 'spawns: [reviewer]\n    system: Review'));
    const self = await conclave(['validate', 'self.yml'], { cwd: dir });
    expect(self.code).toBe(0);
    expect(self.stdout + self.stderr).toContain('template "reviewer" spawns itself: its instances nest until limits.max_depth (3) refuses the next spawn');
  });

  it('resume after the run stopped mid-fan-out (a limit): no spawn repeated, no recorded call made again, the same names', async () => {
    const sent = (r: { body: { messages: unknown[] } }) => JSON.stringify(r.body.messages);
    server = await startFakeAnthropic({
      lead: (r) =>
        sent(r).includes('b.ts: fine')
          ? { text: 'Both reviewed.' }
          : sent(r).includes('Started @')
            ? { text: 'Spawned.' }
            : spawnCall(['Review a.ts', 'Review b.ts']),
      'reviewer-1': [{ text: 'a.ts: fine' }],
      'reviewer-2': [{ text: 'b.ts: fine' }],
    });
    // Three team turns: the lead's, then the two reviewers'; the lead's fan-in turn is past the limit.
    const run = await runWorkflow(server, TEAM('limits: { max_turns: 3 }'));
    expect(run.code).toBe(3);
    const before = server.requests.length;
    const resumed = await conclave(['resume', join(run.dir, String(run.json.session)), '--max-turns', '10', '--json'], { cwd: run.dir, env: env() });
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    // Only the lead's fan-in turn is new: every reviewer answer came from the session.
    expect(server.requests.slice(before).map((r) => r.agent)).toEqual(['lead']);
    expect(sent(server.requests.at(-1)!)).toContain('b.ts: fine');
    const lines = readFileSync(join(run.dir, String(run.json.session)), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.filter((e) => e.type === 'agent_spawned').map((e) => e.agent)).toEqual(['reviewer-1', 'reviewer-2']);
    // The replay of the whole session, with no network, gives the same end.
    const replay = await conclave(['run', 'workflow.yml', '--replay', String(run.json.session), '--json'], {
      cwd: run.dir,
      env: { ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout).agents).toHaveProperty('reviewer-2');
  });

  it('kill -9 while spawned agents are mid-call, then resume: no extra spawn, no recorded call made again', async () => {
    const sent = (r: { body: { messages: unknown[] } }) => JSON.stringify(r.body.messages);
    server = await startFakeAnthropic({
      lead: (r) =>
        sent(r).includes('c.ts: fine')
          ? { text: 'All three reviewed.' }
          : sent(r).includes('Started @')
            ? { text: 'Spawned.' }
            : spawnCall(['Review a.ts', 'Review b.ts', 'Review c.ts']),
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
    // The session's lock can stand in the folder a moment before the session itself.
    const answered = () =>
      existsSync(sessions) &&
      readdirSync(sessions).some((f) => f.endsWith('.jsonl')) &&
      (readFileSync(file(), 'utf8').match(/"type":"turn_ended","agent":"reviewer-/g) ?? []).length >= 2;
    const deadline = Date.now() + 20_000;
    while (!(answered() && server.of('reviewer-3').length === 1) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    child.kill('SIGKILL');
    await closed;
    const before = readFileSync(file(), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(before.filter((e) => e.type === 'agent_spawned')).toHaveLength(3);
    expect(before.some((e) => e.type === 'run_ended')).toBe(false);
    const sentBefore = server.requests.length;
    const resumed = await conclave(['resume', file(), '--json'], { cwd: dir, env: env() });
    expect(resumed.code, resumed.stderr).toBe(0);
    // reviewer-3's call, cut by the kill, goes out again; the answers recorded before it do not.
    const again = server.requests.slice(sentBefore);
    expect(again.filter((r) => r.agent === 'reviewer-3')).toHaveLength(1);
    expect(again.filter((r) => r.agent === 'reviewer-1' || r.agent === 'reviewer-2')).toHaveLength(0);
    const recordedLead = before.filter((e) => e.type === 'model_call' && e.agent === 'lead').length;
    // The lead needs three calls in all (the spawn, its reply, the fan-in): those recorded are not made again.
    expect(recordedLead).toBeGreaterThanOrEqual(1);
    expect(again.filter((r) => r.agent === 'lead')).toHaveLength(3 - recordedLead);
    const after = readFileSync(file(), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(after.filter((e) => e.type === 'agent_spawned').map((e) => e.agent)).toEqual(['reviewer-1', 'reviewer-2', 'reviewer-3']);
    expect(JSON.stringify(server.of('lead').at(-1)!.body.messages.at(-1))).toContain('c.ts: fine');
  }, 60_000);

  it('a timeout ends a three-level tree whose agents run commands: the run stops at once, every command is killed', async () => {
    const marker = `conclave-tree-${process.pid}-${Date.now()}`;
    const sleeper = { tools: [{ name: 'run_command', input: { command: `sh -c 'sleep 30; echo ${marker}' # ${marker}`, timeout_seconds: 60 } }] };
    server = await startFakeAnthropic({
      lead: [{ tools: [{ name: 'spawn', input: { template: 'manager_t', task: 'level one' } }] }, { text: 'waiting' }],
      'manager_t-1': [spawnCall(['level two'], 'worker_t'), sleeper],
      'worker_t-1': [sleeper],
    });
    const workflow = `
name: tree
limits: { timeout: 3s, max_depth: 2 }
sandbox: off
agents:
  lead: { role: manager, spawns: [manager_t] }
templates:
  manager_t: { role: manager, spawns: [worker_t], tools: [run_command] }
  worker_t: { tools: [run_command] }
kickoff: Go.
`;
    const started = Date.now();
    const run = await runWorkflow(server, workflow);
    expect(run.code).toBe(3);
    expect(run.json.reason).toContain('limit reached: timeout');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(run.events.filter((e) => e.type === 'agent_spawned').map((e) => [e.agent, e.depth])).toEqual([
      ['manager_t-1', 1],
      ['worker_t-1', 2],
    ]);
    // Each spawned agent ends with the run, deepest first, recorded.
    expect(run.events.filter((e) => e.type === 'agent_ended').map((e) => [e.agent, e.status])).toEqual([
      ['worker_t-1', 'stopped'],
      ['manager_t-1', 'stopped'],
    ]);
    // Both commands had started; neither outlives the run.
    expect(
      run.events
        .filter((e) => e.type === 'tool_call' && e.tool === 'run_command')
        .map((e) => e.agent)
        .sort(),
    ).toEqual(['manager_t-1', 'worker_t-1']);
    const { execFileSync } = await import('node:child_process');
    const left = execFileSync('sh', ['-c', `ps -eo args | grep -c '[${marker[0]}]${marker.slice(1)}' || true`], { encoding: 'utf8' }).trim();
    expect(left).toBe('0');
  }, 30_000);

  it('cancel ends an agent and everything below it, deepest first, mid-call; the run goes on and ends normally', async () => {
    server = await startFakeAnthropic({
      lead: cancellingLead(1),
      'manager_t-1': SPAWNING_MANAGER,
      'worker_t-1': [{ text: 'slow', delayMs: 30_000 }],
      'worker_t-2': [{ text: 'slow', delayMs: 30_000 }],
    });
    const workflow = CANCEL_TEAM();
    const started = Date.now();
    const run = await runWorkflow(server, workflow);
    expect(run.code, run.stderr + JSON.stringify(run.json.reason)).toBe(0);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(run.events.filter((e) => e.type === 'agent_ended').map((e) => [e.agent, e.status, e.reason])).toEqual([
      ['worker_t-2', 'cancelled', 'cancelled by @lead'],
      ['worker_t-1', 'cancelled', 'cancelled by @lead'],
      ['manager_t-1', 'cancelled', 'cancelled by @lead'],
    ]);
    const told = run.events.find((e) => e.type === 'tool_result' && e.tool === 'cancel');
    expect(told?.content).toBe('Cancelled @manager_t-1 and the 2 agents below it: they take no more turns.');
    expect(run.events.some((e) => e.type === 'turn_failed')).toBe(false);
    // The cancelled workers' calls were asked, then abandoned: no answer of theirs reached the channel.
    expect(server.of('worker_t-1')).toHaveLength(1);
    expect(JSON.stringify(run.events.filter((e) => e.type === 'message'))).not.toContain('slow');
    // show prints the tree: each agent under its spawner, with what its subtree cost and how it ended.
    const shown = await conclave(['show', String(run.json.session)], { cwd: run.dir });
    const usage = shown.stdout.slice(shown.stdout.indexOf('Usage:')).split('\n');
    expect(usage.map((l) => l.trimEnd().match(/^ {2}( *\S+)/)?.[1]).filter(Boolean)).toEqual([
      'lead',
      '  manager_t-1',
      '    worker_t-1',
      '    worker_t-2',
      'total',
    ]);
    expect(usage.find((l) => l.includes('lead'))).toMatch(/with the 3 below/);
    expect(usage.find((l) => l.includes('worker_t-2'))).toContain('(cancelled by @lead)');
    const markdown = await conclave(['show', String(run.json.session), '--format', 'markdown'], { cwd: run.dir });
    expect(markdown.stdout).toMatch(/\| &nbsp;&nbsp;&nbsp;&nbsp;↳ worker_t-1 \(cancelled by @lead\) \|/);
    // The lead's subtree: it and the three below it, counted as show's text counts them.
    expect(markdown.stdout).toMatch(/\n\| lead \|.*\(with the 3 below\) \|\n/);
    const json = JSON.parse((await conclave(['show', String(run.json.session), '--format', 'json'], { cwd: run.dir })).stdout);
    expect(json.spawned['worker_t-1']).toEqual({ template: 'worker_t', parent: 'manager_t-1', depth: 2, ended: 'cancelled by @lead' });
    // The session replays offline to the same end.
    const replay = await conclave(['run', 'workflow.yml', '--replay', String(run.json.session), '--json'], {
      cwd: run.dir,
      env: { ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stderr).toBe(0);
  }, 30_000);

  it("fork: each fork starts as the caller is, its requests beginning with the caller's messages; the event is small; the caller is woken once", async () => {
    const last = (r: { body: { messages: unknown[] } }) => JSON.stringify(r.body.messages.at(-1));
    const all = (r: { body: { messages: unknown[] } }) => JSON.stringify(r.body.messages);
    server = await startFakeAnthropic({
      // The forks keep the lead's system prompt (so the server sees @lead): they are told apart by their task.
      lead: (r) => {
        if (last(r).includes('You are @lead-fork-1')) return { text: 'part A fine' };
        if (last(r).includes('You are @lead-fork-2')) return { text: 'part B fine' };
        if (all(r).includes('part A fine')) return { text: 'Both parts fine.' };
        if (last(r).includes('Forked @')) return { text: 'Forked.' };
        return { tools: [{ name: 'fork', input: { tasks: ['check part A', 'check part B'] } }] };
      },
    });
    const workflow = `
name: fork
agents:
  lead: { role: manager, fork: true, system: ${JSON.stringify(`A long history: ${'x'.repeat(20_000)}`)} }
kickoff: Check both parts.
`;
    const run = await runWorkflow(server, workflow);
    expect(run.code, run.stderr).toBe(0);
    const [first, ...rest] = server.of('lead');
    const forks = rest.filter((r) => last(r).includes('You are @lead-fork-'));
    expect(forks).toHaveLength(2);
    for (const fork of forks) {
      // The same system prompt and tools, and the caller's messages, unchanged, then its call to fork.
      expect(fork.body.system).toEqual(first!.body.system);
      expect(fork.body.tools).toEqual(first!.body.tools);
      // (but for the cache breakpoint each request puts on its own last message)
      const unmarked = (messages: unknown[]) => JSON.parse(JSON.stringify(messages).replace(/,?"cache_control":\{"type":"ephemeral"\}/g, ''));
      expect(unmarked(fork.body.messages.slice(0, first!.body.messages.length))).toEqual(unmarked(first!.body.messages));
      expect(JSON.stringify(fork.body.messages[first!.body.messages.length])).toContain('"name":"fork"');
    }
    expect(last(forks[0]!)).toContain('check part A');
    const events = readFileSync(join(run.dir, String(run.json.session)), 'utf8')
      .trim()
      .split('\n');
    const forked = events.filter((l) => l.includes('"type":"agent_spawned"'));
    expect(forked.map((l) => JSON.parse(l).template)).toEqual(['(fork)', '(fork)']);
    for (const line of forked) expect(Buffer.byteLength(line)).toBeLessThan(300);
    // The lead is woken once, with both answers.
    const woken = server.of('lead').filter((r) => all(r).includes('part A fine') && !last(r).includes('You are @lead-fork'));
    expect(woken).toHaveLength(1);
    expect(last(woken[0]!)).toContain('part B fine');
    const replay = await conclave(['run', 'workflow.yml', '--replay', String(run.json.session), '--json'], {
      cwd: run.dir,
      env: { ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stderr).toBe(0);
  });

  it('a spawned agent that fails, or runs out of turns, ends with its status and its spawner is told; the run goes on, and replays the same', async () => {
    const sent = (r: { body: { messages: unknown[] } }) => JSON.stringify(r.body.messages);
    server = await startFakeAnthropic({
      lead: (r) =>
        sent(r).includes('which branch')
          ? { text: '@reviewer-3 main. @reviewer-1 tell @reviewer-3 the base too.' }
          : sent(r).includes('Started @')
            ? { text: 'Spawned.' }
            : spawnCall(['Review a.ts', 'Review b.ts', 'Review c.ts']),
      'reviewer-1': [{ text: 'a.ts: fine' }, { text: '@reviewer-3 the base is main' }],
      'reviewer-2': () => ({ error: { status: 529, type: 'overloaded_error', message: 'Overloaded', retryAfterMs: 5 } }),
      'reviewer-3': () => ({ text: '@lead which branch?' }),
    });
    const run = await runWorkflow(server, TEAM('limits: { max_turns_per_agent: 2 }'));
    const ended = run.events.filter((e) => e.type === 'agent_ended').map((e) => [e.agent, e.status, e.reason]);
    expect(ended).toEqual([
      ['reviewer-2', 'failed', 'failed: 529 overloaded_error Overloaded'],
      ['reviewer-3', 'limit', 'stopped: it reached max_turns_per_agent (2) with messages it did not handle'],
      // reviewer-1, still there when the run stopped, ends with it.
      ['reviewer-1', 'stopped', 'the run ended: limit reached: max_turns_per_agent (2) for @lead, who still has messages to handle'],
    ]);
    // Written just before run_ended: the end of the run, which a resume does not replay.
    expect(run.events.at(-2)).toMatchObject({ type: 'agent_ended', status: 'stopped' });
    expect(run.events.filter((e) => e.type === 'call_failed').map((e) => e.agent)).toEqual(['reviewer-2']);
    expect(run.events.some((e) => e.type === 'turn_failed')).toBe(false);
    // The lead was told of both, in the channel; the run went on until the lead, a declared agent, ran out of turns.
    const told = run.events
      .filter((e) => e.type === 'message' && (e.message as { sender: string }).sender === 'system')
      .map((e) => (e.message as { text: string }).text);
    expect(told).toContain('@reviewer-2 failed: 529 overloaded_error Overloaded. It takes no more turns.');
    expect(run.json.reason).toBe('limit reached: max_turns_per_agent (2) for @lead, who still has messages to handle');
    // The replay meets the same failure at the same place, with no network.
    const replay = await conclave(['run', 'workflow.yml', '--replay', String(run.json.session), '--json'], {
      cwd: run.dir,
      env: { ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stdout.slice(0, 600)).toBe(3);
    expect(JSON.parse(replay.stdout).reason).toBe(run.json.reason);
  });

  it("spawn with max_turns and budget_usd: each agent is held to its own, carved out of its spawner's; the run goes on", async () => {
    const sent = (r: { body: { messages: unknown[] } }) => JSON.stringify(r.body.messages);
    server = await startFakeAnthropic({
      lead: (r) =>
        sent(r).includes('Started @')
          ? { text: '@worker_t-1 one more thing' }
          : {
              tools: [
                { name: 'spawn', input: { template: 'manager_t', tasks: ['plan'], budget_usd: 1 } },
                { name: 'spawn', input: { template: 'worker_t', tasks: ['a', 'b'] } },
              ],
            },
      'manager_t-1': (r) =>
        sent(r).includes('"tool_result"')
          ? { text: 'done planning' }
          : {
              tools: [
                { name: 'spawn', input: { template: 'worker_t', tasks: ['x', 'y'], budget_usd: 0.6 } },
                { name: 'spawn', input: { template: 'worker_t', tasks: ['z'], budget_usd: 0.001 } },
                { name: 'spawn', input: { template: 'worker_t', tasks: ['p', 'q'], name: 'named' } },
                { name: 'spawn', input: { template: 'worker_t', tasks: ['p'], name: 'lead' } },
                { name: 'spawn', input: { template: 'worker_t', tasks: ['solo'], name: 'solo-worker' } },
              ],
            },
      'worker_t-1': () => ({ text: 'w1' }),
      'worker_t-2': () => ({ text: 'w2' }),
      'worker_t-3': () => ({ text: 'never asked' }),
      'solo-worker': () => ({ text: 'solo done' }),
    });
    const workflow = `
name: caps
limits: { max_depth: 2 }
defaults: { max_tokens: 2048 }
agents:
  lead: { role: manager, spawns: [manager_t, worker_t] }
templates:
  manager_t: { role: manager, spawns: [worker_t] }
  worker_t: { limits: { max_turns: 1 } }
kickoff: Go.
`;
    const run = await runWorkflow(server, workflow);
    const results = run.events.filter((e) => e.type === 'tool_result' && e.tool === 'spawn').map((e) => [e.agent, e.content]);
    // 2 × $0.60 is more than manager_t-1's $1 (the refusal); one of $0.001 fits, but its first call cannot.
    expect(results.find(([agent, content]) => agent === 'manager_t-1' && String(content).startsWith('spawn refused'))?.[1]).toMatch(
      /^spawn refused: 2 × \$0\.6 is more than the \$0\.99\d\d left of your budget_usd$/,
    );
    expect(results).toContainEqual(['manager_t-1', 'Started @worker_t-3. Each has its task; you will be woken when all have answered.']);
    expect(run.events.filter((e) => e.type === 'agent_spawned').map((e) => e.agent)).toContain('solo-worker');
    expect(server.of('solo-worker')).toHaveLength(1);
    // A name is for one agent, and only one no agent has.
    expect(run.events.filter((e) => e.type === 'tool_result' && e.agent === 'manager_t-1' && e.is_error).map((e) => e.content)).toEqual(
      expect.arrayContaining(['"name" names one agent: give one task with it', '"lead" cannot be a new agent\'s name: an agent has that name already']),
    );
    const ended = run.events.filter((e) => e.type === 'agent_ended').map((e) => [e.agent, e.status, String(e.reason).replace(/\$[0-9.]+/g, '$N')]);
    expect(ended).toContainEqual(['worker_t-3', 'limit', 'reached its budget_usd ($N of $N spent; the next call could cost up to $N)']);
    // worker_t's own limits give each instance 1 turn: the lead's second message finds worker_t-1 out of turns.
    expect(ended).toContainEqual(['worker_t-1', 'limit', 'stopped: it reached its max_turns (1) with messages it did not handle']);
    expect(server.of('worker_t-3')).toHaveLength(0);
    expect(run.events.filter((e) => e.type === 'call_failed').map((e) => [e.agent, e.kind])).toEqual([['worker_t-3', 'budget']]);
    const replay = await conclave(['run', 'workflow.yml', '--replay', String(run.json.session), '--json'], {
      cwd: run.dir,
      env: { ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stdout.slice(0, 400)).toBe(run.code);

    // On a loaded machine a worker's answer may come, its turn end, and @worker_t-3's turn start and fail, while
    // their spawner is still between its tool calls (a tool yields between quick tools). A session in that order
    // replays as well: each tool's events wait for the other agents' events recorded before them. When this run
    // did not write that order itself (the replay above re-executed it then), the same session is written so.
    const file = join(run.dir, String(run.json.session));
    const [header, ...lines] = readFileSync(file, 'utf8').trim().split('\n');
    const events = lines.map((l) => JSON.parse(l) as { seq: number; type: string; agent?: string; content?: string; message?: { kind?: string } });
    const last = events.findIndex((e) => e.type === 'tool_result' && String(e.content).startsWith('Started @solo-worker'));
    const t3Started = events.findIndex((e) => e.type === 'turn_started' && e.agent === 'worker_t-3');
    let end = events.findIndex((e) => e.type === 'agent_ended' && e.agent === 'worker_t-3');
    if (events[end + 1]?.type === 'message' && events[end + 1]!.message?.kind !== 'agent') end++;
    const block = events.slice(last + 1, end + 1);
    // The spawner's own events stay after its tool result (a loaded run may have written some before @worker_t-3's end:
    // then no such session can be written from it); the others' keep their order, after the last message it posted.
    if (t3Started > last && !block.some((e) => e.agent === 'manager_t-1')) {
      expect(block.filter((e) => e.agent === 'worker_t-3').map((e) => e.type)).toEqual(['turn_started', 'call_failed', 'agent_ended']);
      const reordered = [...events.slice(0, last), ...block, events[last]!, ...events.slice(end + 1)];
      writeFileSync(file, `${[header, ...reordered.map((e, k) => JSON.stringify({ ...e, seq: k + 1 }))].join('\n')}\n`);
      const loaded = await conclave(['run', 'workflow.yml', '--replay', String(run.json.session), '--json'], {
        cwd: run.dir,
        env: { ANTHROPIC_API_KEY: TEST_API_KEY },
      });
      expect(loaded.code, loaded.stdout.slice(0, 400)).toBe(run.code);
      // Later still: the spawner's tool result between @worker_t-3's failed call and its end (a failure's own events
      // came apart on a loaded machine). The failed agent ends only once the run reaches its end in the recording.
      const failedAt = reordered.findIndex((e) => e.type === 'call_failed' && e.agent === 'worker_t-3');
      const result = reordered.findIndex((e) => e.type === 'tool_result' && String(e.content).startsWith('Started @solo-worker'));
      const apart = [...reordered.slice(0, failedAt + 1), reordered[result]!, ...reordered.slice(failedAt + 1, result), ...reordered.slice(result + 1)];
      expect(apart.slice(failedAt, failedAt + 3).map((e) => [e.type, e.agent])).toEqual([
        ['call_failed', 'worker_t-3'],
        ['tool_result', 'manager_t-1'],
        ['agent_ended', 'worker_t-3'],
      ]);
      writeFileSync(file, `${[header, ...apart.map((e, k) => JSON.stringify({ ...e, seq: k + 1 }))].join('\n')}\n`);
      const later = await conclave(['run', 'workflow.yml', '--replay', String(run.json.session), '--json'], {
        cwd: run.dir,
        env: { ANTHROPIC_API_KEY: TEST_API_KEY },
      });
      expect(later.code, later.stdout.slice(0, 400)).toBe(run.code);
    }
  });

  it('a file that declares more than 64 agents runs: max_agents defaults to as many; one set below them is refused by validate', async () => {
    const workers = Array.from({ length: 70 }, (_, i) => `  w${i}: { role: worker }`).join('\n');
    const wide = `name: wide\nagents:\n  lead: { role: manager, spawns: [extra] }\n${workers}\ntemplates:\n  extra: {}\nkickoff: Go.\n`;
    server = await startFakeAnthropic({ lead: [spawnCall(['one more'], 'extra'), { text: 'done' }], 'extra-1': [{ text: 'ok' }] });
    const run = await runWorkflow(server, wide);
    expect(run.code, run.stderr).toBe(0);
    // 71 declared: the default is 71, so a 72nd is refused.
    expect(run.events.find((e) => e.type === 'tool_result' && e.tool === 'spawn')?.content).toBe(
      'spawn refused: limits.max_agents is 71 and the run has 71 agents; 1 more would pass it',
    );
    writeFileSync(join(run.dir, 'low.yml'), wide.replace('kickoff:', 'limits: { max_agents: 10 }\nkickoff:'));
    const low = await conclave(['validate', 'low.yml'], { cwd: run.dir });
    expect(low.code).toBe(2);
    expect(low.stdout + low.stderr).toContain('limits.max_agents is 10, fewer than the 71 agents the file declares');
  });

  it.skipIf(!sandboxForTests().bwrap)(
    'run_command that only a template gives is sandboxed too: a spawned agent writes nothing outside the workspace',
    async () => {
      const marker = `conclave-template-sandbox-${process.pid}`;
      const home = process.env.HOME ?? '/root';
      server = await startFakeAnthropic({
        lead: (r) =>
          JSON.stringify(r.body.messages).includes('home: ')
            ? { text: 'Done.' }
            : JSON.stringify(r.body.messages).includes('Started @')
              ? { text: 'Spawned.' }
              : spawnCall(['Probe.'], 'prober'),
        'prober-1': [
          { tools: [{ name: 'run_command', input: { command: `echo x > ${home}/${marker} && echo home: written || echo home: refused` } }] },
          { text: 'home: probed' },
        ],
      });
      const run = await runWorkflow(
        server,
        `
name: template-sandbox
sandbox: required
agents:
  lead: { role: manager, spawns: [prober] }
templates:
  prober: { tools: [run_command] }
kickoff: Go.
`,
      );
      expect(run.code, run.stderr).toBe(0);
      expect(run.events.find((e) => e.type === 'tool_result' && e.tool === 'run_command')?.content).toContain('home: refused');
      expect(existsSync(join(home, marker))).toBe(false);
    },
    30_000,
  );
});
