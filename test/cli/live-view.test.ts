import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListrLogger } from 'listr2';
import { afterEach, describe, expect, it } from 'vitest';
import { liveView } from '../../src/cli/output/live-view.js';
import { Journal } from '../../src/engine/replay/journal.js';
import { Run } from '../../src/engine/run.js';
import { Provider } from '../../src/provider/client.js';
import { connect } from '../../src/provider/connect.js';
import { Pacer } from '../../src/provider/rates/pacer.js';
import { localLimiters } from '../../src/provider/rates/rate-limiters.js';
import { FAN_OUT as FAN_OUT_SPAWN, fanOutScript } from '../fixtures/fan-out.js';
import type { ModelRequest, ModelResponse } from '../../src/provider/client.js';
import type { BatchApi } from '../../src/provider/batch-api.js';
import { DEFAULT_LIMITS } from '../../src/workflow/limits.js';
import { loadWorkflow } from '../../src/workflow/load.js';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { BIN } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';
import { readEvents } from '../helpers/session.js';
import { reply } from '../fixtures/model-responses.js';

/** A listr2 logger that keeps what the test renderer logs. */
class Captured extends ListrLogger {
  readonly lines: string[] = [];
  override toStdout(message: string | unknown[]): void {
    this.lines.push(String(message));
  }
  override toStderr(message: string | unknown[]): void {
    this.lines.push(String(message));
  }
}

const FAN_OUT = `
name: fan-out
agents:
  lead: { role: manager, tools: [list_files] }
  a: { role: worker }
  b: { role: worker }
kickoff: Go.
`;

/** The lead lists files, fans out to a and b, then completes; workers answer after a moment. */
async function fakeModel(request: ModelRequest): Promise<ModelResponse> {
  const system = (request.system as { text: string }[])[0]!.text;
  const said = JSON.stringify(request.messages);
  await new Promise((r) => setTimeout(r, 20));
  if (!system.startsWith('You are @lead')) return reply([{ type: 'text', text: 'done', citations: null }]);
  if (said.includes('from @a') && said.includes('from @b')) {
    return reply([{ type: 'tool_use', id: 'toolu_2', name: 'complete', input: { status: 'success', summary: 'ok' } }], 'tool_use');
  }
  if (said.includes('tool_result')) return reply([{ type: 'text', text: '@a @b check', citations: null }]);
  return reply([{ type: 'tool_use', id: 'toolu_1', name: 'list_files', input: {} }], 'tool_use');
}

describe('the live view', () => {
  it('shows each agent going through its states in order during a fan-out run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-live-'));
    writeFileSync(join(dir, 'workflow.yml'), FAN_OUT);
    const { workflow } = await loadWorkflow(join(dir, 'workflow.yml'));
    const logger = new Captured();
    const view = liveView(['lead', 'a', 'b'], workflow!.limits, { renderer: 'test', logger });
    await view.ready;
    const journal = new Journal({ write: () => {}, sync: () => {}, lineOf: (e) => JSON.stringify(e) });
    const run = new Run({
      workflow: workflow!,
      inputs: {},
      identity: { runId: 'r', sessionPath: 's' },
      place: { workspace: dir, env: {} },
      answers: { call: fakeModel },
      recording: { journal, limits: workflow!.limits },
      progress: view.listener,
    });
    const result = await run.start();
    await view.finish();
    expect(result.status).toBe('success');

    const titles = logger.lines
      .map((l) => JSON.parse(l) as { event: string; data: string })
      .filter((e) => e.event === 'TITLE')
      .map((e) => e.data);
    const statesOf = (agent: string) =>
      titles
        .filter((t) => t.startsWith(`@${agent} `))
        .map((t) => /^@\S+ {2}(.+?) ·/.exec(t)![1]!)
        .filter((state, i, all) => state !== all[i - 1]);
    expect(statesOf('lead')).toEqual([
      'waiting',
      'starting',
      'thinking',
      'using list_files',
      'thinking',
      'idle',
      'starting',
      'thinking',
      'using complete',
      'idle',
      'done',
    ]);
    expect(statesOf('a')).toEqual(['waiting', 'starting', 'thinking', 'idle', 'done']);
    expect(titles.filter((t) => t.startsWith('@a ')).at(-1)).toMatch(/^@a {2}done · 1 turn · 110 tokens · \$0\.0003$/);
    expect(titles.filter((t) => t.startsWith('team ')).at(-1)).toMatch(/^team {2}\d+s · \$0\.\d{4} of \$5\.00 · 4 of 100 turns$/);
  });
});

describe('the live view of batched calls', () => {
  it("shows an agent whose call waits for its message batch, then the batch's answer", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-live-'));
    writeFileSync(join(dir, 'workflow.yml'), 'name: batched\ndefaults: { batch: true }\nagents:\n  lead: { role: manager }\nkickoff: Go.\n');
    const { workflow } = await loadWorkflow(join(dir, 'workflow.yml'));
    const logger = new Captured();
    const view = liveView(['lead'], workflow!.limits, { renderer: 'test', logger });
    await view.ready;
    const journal = new Journal({ write: () => {}, sync: () => {}, lineOf: (e) => JSON.stringify(e) });
    let polls = 0;
    const requests: { custom_id: string }[] = [];
    const batches: BatchApi = {
      create: async (body) => (requests.push(...body.requests), { id: 'msgbatch_1' }),
      retrieve: async () => ({ id: 'msgbatch_1', processing_status: ++polls > 1 ? 'ended' : 'in_progress', created_at: new Date().toISOString() }),
      results: async () =>
        (async function* () {
          for (const r of requests)
            yield { custom_id: r.custom_id, result: { type: 'succeeded' as const, message: reply([{ type: 'text', text: 'done', citations: null }]) } };
        })(),
      cancel: async () => ({}),
    };
    const run = new Run({
      workflow: workflow!,
      inputs: {},
      identity: { runId: 'r', sessionPath: 's' },
      place: { workspace: dir, env: {} },
      answers: { call: () => Promise.reject(new Error('no ordinary call')), batches },
      recording: { journal, limits: workflow!.limits },
      progress: view.listener,
    });
    const result = await run.start();
    await view.finish();
    expect(result.status, result.reason).toBe('idle');
    const states = logger.lines
      .map((l) => JSON.parse(l) as { event: string; data: string })
      .filter((e) => e.event === 'TITLE' && e.data.startsWith('@lead '))
      .map((e) => /^@\S+ {2}(.+?) ·/.exec(e.data)![1]!)
      .filter((state, i, all) => state !== all[i - 1]);
    expect(states).toEqual(['waiting', 'starting', 'waiting for its message batch', 'idle', 'done']);
    expect(polls).toBe(2);
  });
});

describe('the live view of a team that grows', () => {
  it('folds the agents spawned from a template into one line, whatever their number', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-live-'));
    writeFileSync(join(dir, 'workflow.yml'), 'name: grow\nagents:\n  lead: { role: manager, spawns: [checker] }\ntemplates:\n  checker: {}\nkickoff: Go.\n');
    const { workflow } = await loadWorkflow(join(dir, 'workflow.yml'));
    const logger = new Captured();
    const view = liveView(['lead', 'checker'], workflow!.limits, { renderer: 'test', logger });
    await view.ready;
    const journal = new Journal({ write: () => {}, sync: () => {}, lineOf: (e) => JSON.stringify(e) });
    const model = async (request: ModelRequest): Promise<ModelResponse> => {
      const system = (request.system as { text: string }[])[0]!.text;
      const said = JSON.stringify(request.messages);
      await new Promise((r) => setTimeout(r, 10));
      if (!system.startsWith('You are @lead')) return reply([{ type: 'text', text: 'checked', citations: null }]);
      if ((said.match(/from @checker-/g) ?? []).length >= 5)
        return reply([{ type: 'tool_use', id: 'toolu_9', name: 'complete', input: { status: 'success', summary: 'ok' } }], 'tool_use');
      if (said.includes('Started @')) return reply([{ type: 'text', text: 'spawned', citations: null }]);
      return reply([{ type: 'tool_use', id: 'toolu_1', name: 'spawn', input: { template: 'checker', tasks: ['1', '2', '3', '4', '5'] } }], 'tool_use');
    };
    const run = new Run({
      workflow: workflow!,
      inputs: {},
      identity: { runId: 'r', sessionPath: 's' },
      place: { workspace: dir, env: {} },
      answers: { call: model },
      recording: { journal, limits: workflow!.limits },
      progress: view.listener,
    });
    const result = await run.start();
    await view.finish();
    expect(result.status, result.reason).toBe('success');
    const titles = logger.lines
      .map((l) => JSON.parse(l) as { event: string; data: string })
      .filter((e) => e.event === 'TITLE')
      .map((e) => e.data);
    expect(titles.some((t) => /^@checker-\* {2}5 agents: .*thinking/.test(t))).toBe(true);
    expect(titles.filter((t) => t.startsWith('@checker')).at(-1)).toMatch(/^@checker-\* {2}5 agents: 5 done · 5 turns · 550 tokens · \$0\.\d+$/);
    expect(titles.filter((t) => t.startsWith('@lead ')).at(-1)).toMatch(/^@lead {2}done · 2 turns/);
  });
});

describe('the live view under the API rate limits', () => {
  it('shows the agents that wait for a rate limit, through the real SDK and pacer', async () => {
    const server = await startFakeAnthropic(fanOutScript(6), { rateLimits: { requests: { limit: 3, windowMs: 1_500 } } });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-live-'));
    writeFileSync(join(dir, 'workflow.yml'), FAN_OUT_SPAWN(6));
    const { workflow } = await loadWorkflow(join(dir, 'workflow.yml'));
    const logger = new Captured();
    const view = liveView(['lead', 'reviewer'], workflow!.limits, { renderer: 'test', logger });
    await view.ready;
    const base = process.env.ANTHROPIC_BASE_URL;
    process.env.ANTHROPIC_BASE_URL = server.url;
    const connections = [await connect('anthropic', { ANTHROPIC_API_KEY: TEST_API_KEY })];
    const provider = new Provider({ connections, maxRetries: 2, requestTimeoutMs: 30_000, pacer: new Pacer(() => ({}), localLimiters) });
    try {
      const run = new Run({
        workflow: workflow!,
        inputs: {},
        identity: { runId: 'r', sessionPath: 's' },
        place: { workspace: dir, env: {} },
        answers: { call: (request, signal, listeners, to) => provider.call(request, signal, listeners, to) },
        recording: { journal: new Journal({ write: () => {}, sync: () => {}, lineOf: (e) => JSON.stringify(e) }), limits: workflow!.limits },
        progress: view.listener,
      });
      const result = await run.start();
      await view.finish();
      expect(result.exitCode, result.reason).toBe(0);
    } finally {
      process.env.ANTHROPIC_BASE_URL = base;
      await server.close();
    }
    const titles = logger.lines
      .map((l) => JSON.parse(l) as { event: string; data: string })
      .filter((e) => e.event === 'TITLE')
      .map((e) => e.data);
    expect(
      titles.some((t) => /^@reviewer-\* {2}6 agents: .*waiting for the rate limit on requests/.test(t)),
      titles.join('\n'),
    ).toBe(true);
    expect(server.refusals).toBe(0);
  }, 30_000);
});

describe('without a terminal', () => {
  let server: FakeAnthropic;
  afterEach(() => server?.close());

  it('prints plain lines, each with a time and the agent it concerns', async () => {
    server = await startFakeAnthropic({
      lead: [{ text: '@a @b check' }, { text: '' }],
      a: [{ text: 'fine' }],
      b: [{ text: 'fine too' }],
    });
    const run = await runWorkflow(server, 'name: plain\nagents:\n  lead: { role: manager }\n  a: { role: worker }\n  b: { role: worker }\nkickoff: Go.\n');
    expect(run.code).toBe(0);
    const lines = run.stderr.trim().split('\n');
    expect(lines.length).toBeGreaterThan(8);
    for (const line of lines) expect(line).toMatch(/^\d\d:\d\d:\d\d @(lead|a|b) /);
    expect(lines.map((l) => l.slice(9)).filter((l) => l.startsWith('@a '))).toEqual([
      '@a turn 1: 1 new message',
      '@a thinking',
      '@a → @lead: fine',
      expect.stringMatching(/^@a turn 1 done · \d+ tokens · \$0\.\d+$/),
    ]);
  });
});

describe('Ctrl-C in a terminal', () => {
  it('ends as in a pipe: exit 130, run_ended written, the lock released, and how to resume', async () => {
    const server = await startFakeAnthropic({ lead: [{ hang: true }] });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-pty-'));
    writeFileSync(join(dir, 'workflow.yml'), 'name: plain\nagents:\n  lead: { role: manager }\nkickoff: Go.\n');
    // script(1) gives conclave a pseudo-terminal, so the live view runs; ^C typed into it is SIGINT.
    const child = spawn('script', ['-qfec', `stty rows 40 cols 120; exec ${process.execPath} ${BIN} run workflow.yml`, '/dev/null'], {
      cwd: dir,
      env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY, TERM: 'xterm', CI: undefined },
    });
    let screen = '';
    child.stdout.on('data', (c) => (screen += c));
    // Once the call is in flight and the live view is on screen:
    while (server.requests.length === 0 || !screen.includes('thinking')) await new Promise((r) => setTimeout(r, 20));
    child.stdin.write('\x03');
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    await server.close();
    expect(code).toBe(130);
    const sessions = join(dir, '.conclave', 'sessions');
    const file = join(sessions, readdirSync(sessions).find((f) => f.endsWith('.jsonl'))!);
    expect(readEvents(file).at(-1)).toMatchObject({ type: 'run_ended', status: 'interrupted', exit_code: 130 });
    expect(readdirSync(sessions).filter((f) => f.endsWith('.lock'))).toEqual([]);
    expect(screen).toContain('to continue: conclave resume .conclave/sessions/');
    // The agent that was thinking when ^C came is shown stopped, not done.
    expect(screen).toMatch(/@lead {2}stopped · 1 turn/);
    expect(screen).not.toMatch(/@lead {2}done/);
  });

  it('a terminal narrower than 40 columns (or of 0) gets the plain lines: no escape sequence cut across lines', async () => {
    const server = await startFakeAnthropic({ lead: () => ({ text: 'done' }) });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-pty-'));
    writeFileSync(join(dir, 'workflow.yml'), 'name: plain\nagents:\n  lead: { role: manager }\nkickoff: Go.\n');
    for (const cols of [0, 20]) {
      const child = spawn('script', ['-qfec', `stty rows 40 cols ${cols}; exec ${process.execPath} ${BIN} run workflow.yml`, '/dev/null'], {
        cwd: dir,
        env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY, TERM: 'xterm', CI: undefined },
      });
      let screen = '';
      child.stdout.on('data', (c) => (screen += c));
      expect(await new Promise<number | null>((resolve) => child.on('close', resolve))).toBe(0);
      expect(screen).toMatch(/\d\d:\d\d:\d\d @lead turn 1: 1 new message/);
      // No line ends inside an escape sequence (an ESC with no final byte before the line break).
      for (const line of screen.split(/\r?\n/)) expect(line).not.toMatch(/\x1b(\[[0-9;?]*)?$/);
    }
    await server.close();
  });
});

describe('the live view and stop reasons', () => {
  it('shows an agent continuing after max_tokens or pause_turn, and one that refused', async () => {
    const logger = new Captured();
    const view = liveView(['lead', 'w'], DEFAULT_LIMITS, { renderer: 'test', logger });
    await view.ready;
    view.listener({ type: 'turn_started', agent: 'w', turn: 1, messages: 1 });
    view.listener({ type: 'stop_reason', agent: 'w', reason: 'max_tokens' });
    view.listener({ type: 'stop_reason', agent: 'w', reason: 'pause_turn' });
    view.listener({ type: 'stop_reason', agent: 'lead', reason: 'refusal' });
    await view.finish();
    const titles = logger.lines
      .map((l) => JSON.parse(l) as { event: string; data: string })
      .filter((e) => e.event === 'TITLE')
      .map((e) => e.data);
    expect(titles).toContainEqual(expect.stringMatching(/^@w {2}continuing after max_tokens · 1 turn/));
    expect(titles).toContainEqual(expect.stringMatching(/^@w {2}continuing after pause_turn · /));
    expect(titles).toContainEqual(expect.stringMatching(/^@lead {2}refused · /));
  });
});
