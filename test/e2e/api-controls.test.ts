import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEPRECATED_BETAS } from '../fake-anthropic/cache-diagnosis.js';
import { COMPACTION_BETA, FAST_MODE_BETA, FALLBACK_DEFAULT_BETA, FALLBACK_LIST_BETA, TASK_BUDGET_BETA } from '../fake-anthropic/api-controls.js';
import { pingPongScript, pingPongWorkflow } from '../fixtures/ping-pong.js';
import { lastUserText, startFakeAnthropic, type FakeAnthropic, type FakeOptions, type RecordedRequest, type Reply } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

let servers: FakeAnthropic[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});
async function serve(script: Parameters<typeof startFakeAnthropic>[0], options: FakeOptions = {}): Promise<FakeAnthropic> {
  const s = await startFakeAnthropic(script, options);
  servers.push(s);
  return s;
}

const betasOf = (r: RecordedRequest) =>
  String(r.headers['anthropic-beta'] ?? '')
    .split(',')
    .filter(Boolean);
const complete = (summary: string): Reply => ({ tools: [{ name: 'complete', input: { status: 'success', summary } }] });

/** A lead that asks its worker once and completes with the worker's answer. */
const leadScript = (r: RecordedRequest): Reply =>
  lastUserText(r).includes('@w') && r.call > 1 ? complete(lastUserText(r).split('\n').at(-1)!) : { text: '@w look at it' };

const DECLINING = (fallbacks: string) => `
name: declined
defaults: { max_tokens: 2048 }
agents:
  lead: { role: manager, model: claude-fable-5, ${fallbacks} }
  w: { role: worker, model: claude-sonnet-5-5 }
kickoff: Review the exploit write-up.
outputs:
  summary: $<< result.summary >>
`;

describe('server-side fallbacks (docs/api-controls.md)', () => {
  it('a declining model with fallbacks: [claude-opus-5]: answered by claude-opus-5, priced and recorded as it, replayed offline', async () => {
    const declines = { models: ['claude-fable-5'], category: 'cyber', recommended: 'claude-opus-5' };
    const server = await serve({ lead: leadScript, w: [{ text: 'it is a harmless proof of concept' }] }, { declines, promptCache: {} });
    const run = await runWorkflow(server, DECLINING('fallbacks: [claude-opus-5]'));
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.outputs.summary).toBe('it is a harmless proof of concept');

    // Every request of the lead carries its fallbacks and their beta header; no request carries a deprecated header.
    const leads = server.of('lead');
    expect(leads.length).toBe(2);
    for (const r of leads) {
      expect((r.body as unknown as { fallbacks: unknown }).fallbacks).toEqual([{ model: 'claude-opus-5' }]);
      expect(betasOf(r)).toEqual([FALLBACK_LIST_BETA]);
    }
    expect(betasOf(server.of('w')[0]!)).toEqual([]);
    for (const r of server.requests) for (const beta of DEPRECATED_BETAS) expect(betasOf(r)).not.toContain(beta);

    // The session names the model that answered, and prices the call as it (Opus 5: $5 / $25 a million).
    const calls = run.events.filter((e) => e.type === 'model_call' && e.agent === 'lead') as unknown as {
      answered_by?: string;
      cost_usd: number;
      response: { model: string; usage: { input_tokens: number; output_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number } };
    }[];
    expect(calls.map((c) => c.answered_by)).toEqual(['claude-opus-5', 'claude-opus-5']);
    for (const c of calls) {
      expect(c.response.model).toBe('claude-opus-5');
      const u = c.response.usage;
      const opus = (u.input_tokens * 5 + u.output_tokens * 25 + u.cache_creation_input_tokens * 6.25 + u.cache_read_input_tokens * 0.5) / 1e6;
      expect(c.cost_usd).toBeCloseTo(opus, 9);
    }
    // --json names it, a line per agent a fallback answered.
    expect(run.json.fallbacks).toEqual([{ agent: 'lead', model: 'claude-opus-5', calls: 2 }]);

    // show says it; the replay offline gives the same cost and the same answer, with no request.
    const session = join(run.dir, String(run.json.session));
    const shown = await conclave(['show', session], { cwd: run.dir });
    expect(shown.stdout).toContain("Fallback: @lead's model declined 2 calls, answered by claude-opus-5 (priced as claude-opus-5)");
    const before = server.requests.length;
    const replay = await conclave(['run', 'workflow.yml', '--replay', session, '--json'], { cwd: run.dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(replay.code, replay.stderr).toBe(0);
    const replayed = JSON.parse(replay.stdout);
    expect(replayed.usage.cost_usd).toBe((run.json.usage as { cost_usd: number }).cost_usd);
    expect(replayed.fallbacks).toEqual(run.json.fallbacks);
    expect(server.requests.length).toBe(before);
  });

  it('fallbacks: default sends its own beta header; with no fallback the refusal names its category and the recommended model', async () => {
    const declines = { models: ['claude-fable-5'], category: 'cyber', recommended: 'claude-opus-5' };
    const byDefault = await serve({ lead: leadScript, w: [{ text: 'fine' }] }, { declines });
    const run = await runWorkflow(byDefault, DECLINING('fallbacks: default'));
    expect(run.code, run.stderr).toBe(0);
    expect(betasOf(byDefault.of('lead')[0]!)).toEqual([FALLBACK_DEFAULT_BETA]);
    expect((byDefault.of('lead')[0]!.body as unknown as { fallbacks: unknown }).fallbacks).toBe('default');
    // The API's choice is known only from the answer: the call is held at the highest price, not at Fable's. A budget the
    // lead's own model fits under ($50 a million out: about $0.11 for 2,048 tokens) but the highest ($75: about $0.16) does not.
    const tight = await serve({ lead: leadScript, w: [{ text: 'fine' }] }, { declines });
    const held = await runWorkflow(tight, DECLINING('fallbacks: default').replace('defaults: {', 'limits: { budget_usd: 0.14 }\ndefaults: {'));
    expect(held.code, held.stderr).toBe(3);
    expect(held.json.reason).toMatch(/^limit reached: budget_usd \(spent \$0\.00 of \$0\.14; the next call could cost up to \$0\.1[5-9]/);
    expect(tight.requests).toHaveLength(0);
    const named = await serve({ lead: leadScript, w: [{ text: 'fine' }] }, { declines: { ...declines, models: [] } });
    const fits = await runWorkflow(named, DECLINING('effort: high').replace('defaults: {', 'limits: { budget_usd: 0.14 }\ndefaults: {'));
    expect(named.of('lead').length, fits.stderr).toBeGreaterThan(0);

    const none = await serve({ lead: leadScript }, { declines });
    const refused = await runWorkflow(none, DECLINING('effort: high'));
    expect(refused.code).toBe(1);
    expect(refused.json.reason).toBe(
      "@lead's model claude-fable-5 declined to answer (stop reason refusal, category cyber) in its turn 1, so the run cannot go on; the API recommends " +
        "claude-opus-5: name it in the agent's fallbacks: to have the API answer with it",
    );
    expect(betasOf(none.of('lead')[0]!)).toEqual([]);
  });

  it('fallbacks where the API cannot honour them are workflow errors, each at its line', async () => {
    const server = await serve({});
    const bad = `
name: bad
provider: bedrock
defaults: { fallbacks: [claude-opus-5] }
agents:
  lead: { role: manager, provider: anthropic, batch: true }
  w: { role: worker }
  own: { role: worker, provider: anthropic, model: claude-opus-5 }
  four: { role: worker, provider: anthropic, fallbacks: [a, b, c, d] }
kickoff: Go.
`;
    const run = await runWorkflow(server, bad);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('agents.lead has fallbacks and batch: true: the Message Batches API does not take fallbacks');
    expect(run.stderr).toContain("agents.w has fallbacks, but its provider is bedrock: server-side fallback is Anthropic's API's own");
    expect(run.stderr).toContain("agents.own's fallbacks name its own model claude-opus-5: a fallback is another model");
    expect(run.stderr).toMatch(/agents\.four\.fallbacks/);
    expect(server.requests).toHaveLength(0);

    // --batch would send them to the Message Batches API, which does not take them: refused before any call.
    const batched = await runWorkflow(server, DECLINING('fallbacks: [claude-opus-5]'), ['--batch']);
    expect(batched.code).toBe(2);
    expect(batched.stderr).toContain(
      '--batch sends every call as a message batch, but the workflow has agents.lead.fallbacks, which the Message Batches API does not take',
    );
    expect(server.requests).toHaveLength(0);
  });
});

describe('task_budget: auto (docs/api-controls.md)', () => {
  it("a spawned agent with its own budget_usd is told what that leaves it, when less than the run's", async () => {
    const server = await serve({
      lead: (r) =>
        lastUserText(r).includes('done') ? complete('ok') : { tools: [{ name: 'spawn', input: { template: 'helper', tasks: ['look'], budget_usd: 0.5 } }] },
      'helper-1': [{ text: 'done' }],
    });
    const run = await runWorkflow(
      server,
      `
name: carved
defaults: { max_tokens: 2048, task_budget: auto }
limits: { budget_usd: 2 }
agents:
  lead: { role: manager, model: claude-opus-5, spawns: [helper] }
templates:
  helper: { model: claude-opus-5 }
kickoff: Go.
`,
    );
    expect(run.code, run.stderr).toBe(0);
    const told = (r: RecordedRequest) => (r.body.output_config as { task_budget: { total: number; remaining: number } }).task_budget;
    // $0.50 at Opus 5's output price ($25 a million) is 20,000 tokens: less than the run's $2 leaves.
    expect(told(server.of('helper-1')[0]!)).toEqual({ type: 'tokens', total: 20_000, remaining: 20_000 });
    expect(told(server.of('lead')[1]!).remaining).toBeGreaterThan(60_000);
  });

  it('each call tells the model what is left, falling call by call; a resume sends what the recording was told', async () => {
    const tool = (i: number): Reply => ({ tools: [{ name: 'list_files', input: { path: '.' } }], text: `step ${i}` });
    const server = await serve({ lead: [tool(1), tool(2), tool(3), complete('done')] });
    const flow = `
name: budgeted
defaults: { max_tokens: 2048, task_budget: auto }
limits: { budget_usd: 2 }
agents:
  lead: { role: manager, model: claude-opus-5, tools: [list_files] }
kickoff: Look around.
`;
    const run = await runWorkflow(server, flow);
    expect(run.code, run.stderr).toBe(0);
    const told = server.of('lead').map((r) => (r.body.output_config as { task_budget?: { type: string; total: number; remaining: number } }).task_budget!);
    expect(told).toHaveLength(4);
    for (const r of server.of('lead')) expect(betasOf(r)).toEqual([TASK_BUDGET_BETA]);
    // $2 at Opus 5's output price ($25 a million) is 80,000 tokens; each call spends some.
    expect(told[0]).toEqual({ type: 'tokens', total: 80_000, remaining: 80_000 });
    for (let i = 1; i < told.length; i++) {
      expect(told[i]!.remaining).toBeLessThan(told[i - 1]!.remaining);
      expect(told[i]!.total).toBe(80_000);
    }
    // Recorded as sent; the replay sends nothing and matches.
    const recorded = run.events
      .filter((e) => e.type === 'model_call')
      .map((e) => (e.request as { output_config?: { task_budget?: unknown } }).output_config?.task_budget);
    expect(recorded).toEqual(told);
    const session = join(run.dir, String(run.json.session));
    const replay = await conclave(['run', 'workflow.yml', '--replay', session, '--json'], { cwd: run.dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(replay.code, replay.stderr).toBe(0);
    expect(readFileSync(session, 'utf8')).not.toContain('"divergence"');

    // task_budget: auto set on a team recorded without it: the replay names the change.
    const plainServer = await serve({ lead: [tool(1), tool(2), tool(3), complete('done')] });
    const plain = await runWorkflow(plainServer, flow.replace(', task_budget: auto', ''));
    expect(plain.code, plain.stderr).toBe(0);
    writeFileSync(join(plain.dir, 'workflow.yml'), flow);
    const changed = await conclave(['run', 'workflow.yml', '--replay', String(plain.json.session), '--json'], {
      cwd: plain.dir,
      env: { ANTHROPIC_API_KEY: '' },
    });
    expect(changed.code).toBe(1);
    expect(changed.stdout + changed.stderr).toContain('task_budget');
  });
});

describe("compaction as the API's request (docs/api-controls.md)", () => {
  it("on Anthropic's API the summary is a compaction request, recorded with its cost and replayed offline", async () => {
    const server = await serve(pingPongScript(800));
    // max_tokens small enough that the earlier turns fit in the summary call beside it.
    const run = await runWorkflow(server, pingPongWorkflow({ maxTurns: 40, compactAt: 6_000 }).replace('defaults:\n', 'defaults:\n  max_tokens: 1024\n'));
    expect(run.code, run.stderr).toBe(3);
    const compactions = run.events.filter((e) => e.type === 'context_compacted' && e.summary !== null);
    expect(compactions.length).toBeGreaterThanOrEqual(2);
    const asked = server.requests.filter((r) => r.body.compaction !== undefined);
    expect(asked).toHaveLength(compactions.length);
    for (const r of asked) {
      expect(r.body.compaction).toMatchObject({ type: 'summarize' });
      expect(betasOf(r)).toEqual([COMPACTION_BETA]);
      // The conversation is summarised as it stands: no summary prompt of conclave's own as its last message.
      expect(r.body.messages.at(-1)!.role).toBe('assistant');
    }
    for (const c of compactions) {
      expect(c.by).toBe('api');
      expect(c.summary).toMatch(/^Summary by @/);
      // Its cost is the cost of the call just before it, the compaction request.
      const call = run.events.filter((e) => e.type === 'model_call' && e.agent === c.agent && e.seq < c.seq).at(-1)!;
      expect((call.response as { content: { type: string }[] }).content.map((b) => b.type)).toEqual(['compaction']);
      expect(c.cost_usd).toBe(call.cost_usd);
      expect(c.cost_usd as number).toBeGreaterThan(0);
    }
    const before = server.requests.length;
    const replay = await conclave(['run', 'workflow.yml', '--replay', String(run.json.session), '--json'], { cwd: run.dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(replay.code, replay.stderr).toBe(3);
    expect(JSON.parse(replay.stdout).outputs).toEqual(run.json.outputs);
    expect(server.requests.length).toBe(before);
  }, 60_000);
});

describe('speed: fast (docs/api-controls.md)', () => {
  it('sent with its beta header, recorded, and priced at six times the standard price', async () => {
    const server = await serve({ lead: [complete('quick')] });
    const flow = `
name: quick
agents:
  lead: { role: manager, model: claude-opus-5, speed: fast, max_tokens: 1024 }
kickoff: Be quick.
`;
    const run = await runWorkflow(server, flow);
    expect(run.code, run.stderr).toBe(0);
    const sent = server.of('lead')[0]!;
    expect(sent.body.speed).toBe('fast');
    expect(betasOf(sent)).toEqual([FAST_MODE_BETA]);
    const call = run.events.find((e) => e.type === 'model_call')! as unknown as {
      request: { speed?: string };
      cost_usd: number;
      response: { usage: { input_tokens: number; output_tokens: number; speed?: string } };
    };
    expect(call.request.speed).toBe('fast');
    expect(call.response.usage.speed).toBe('fast');
    const u = call.response.usage;
    expect(call.cost_usd).toBeCloseTo(((u.input_tokens * 5 + u.output_tokens * 25) * 6) / 1e6, 9);
  });

  it('the estimate prices a fast agent at six times', async () => {
    const server = await serve({});
    const flow = (speed: string) => `
name: quick
agents:
  lead: { role: manager, model: claude-opus-5, ${speed} max_tokens: 1024 }
kickoff: Be quick.
`;
    const estimate = async (speed: string) => {
      const dir = mkdtempSync(join(tmpdir(), 'conclave-fast-'));
      writeFileSync(join(dir, 'workflow.yml'), flow(speed));
      const result = await conclave(['estimate', 'workflow.yml', '--json'], {
        cwd: dir,
        env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
      });
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as { likely_usd: number };
    };
    const standard = await estimate('');
    const fast = await estimate('speed: fast,');
    expect(standard.likely_usd).toBeGreaterThan(0);
    expect(fast.likely_usd / standard.likely_usd).toBeCloseTo(6, 6);
  });
});
