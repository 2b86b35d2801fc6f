import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mermaid from 'mermaid';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic, type Script } from '../fake-anthropic/server.js';
import { spawn } from 'node:child_process';
import { BIN, conclave, NODE } from '../helpers/cli.js';
import { startOtlpReceiver, fromJson, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { runWorkflow, TEST_API_KEY, type WorkflowRun } from '../helpers/run-workflow.js';
import { FAN_OUT, fanOutScript } from '../fixtures/fan-out.js';

const SECRET = 'hunter2-the-secret-token-value';

/** A lead, a helper who reads a file, and a vote: every kind of span. */
const TEAM = `
name: traced
inputs:
  token: { type: string, secret: true }
defaults: { model: claude-opus-4-5-20251101, max_tokens: 2048 }
agents:
  lead: { role: manager }
  helper: { role: worker, tools: [read_file] }
kickoff: Check notes.txt with the token $<< inputs.token >>.
`;

const TEAM_SCRIPT = (): Script => ({
  lead: [
    { text: '@helper read notes.txt' },
    { tools: [{ name: 'propose', input: { id: 'ship', question: 'Ship it?', options: ['yes', 'no'] } }] },
    { text: '' },
    { tools: [{ name: 'complete', input: { status: 'success', summary: `done, with ${SECRET}` } }] },
  ],
  helper: [
    { tools: [{ name: 'read_file', input: { path: 'notes.txt' } }] },
    { text: `@lead it says ${SECRET}` },
    { tools: [{ name: 'vote', input: { proposal: 'ship', option: 'yes', reason: 'ok' } }] },
    { text: '' },
    { text: '' },
  ],
});

let server: FakeAnthropic;
let receiver: OtlpReceiver;
afterEach(async () => {
  await server?.close();
  await receiver?.close();
});

const live = new Map<string, ReceivedSpan>();
const byName = (spans: ReceivedSpan[], prefix: string) => spans.filter((s) => s.name.startsWith(prefix));
const ids = (spans: ReceivedSpan[]) => spans.map((s) => `${s.spanId}<${s.parentSpanId}:${s.name}`).sort();
/** Each span's id with its start and end: the same spans must carry the same times, live or from the file. */
const times = (spans: ReceivedSpan[]) => spans.map((s) => `${s.spanId} ${s.startNs}-${s.endNs}`).sort();

async function tracedRun(env: NodeJS.ProcessEnv = {}, args: string[] = []): Promise<WorkflowRun> {
  server = await startFakeAnthropic(TEAM_SCRIPT());
  receiver = await startOtlpReceiver();
  return runWorkflow(server, TEAM, ['-i', `token=${SECRET}`, ...args], {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...env },
    files: { 'notes.txt': `the notes mention ${SECRET}` },
  });
}

function expectShape(spans: ReceivedSpan[], run: WorkflowRun): void {
  expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
  const [workflow, ...others] = byName(spans, 'invoke_workflow');
  expect(others).toEqual([]);
  expect(workflow).toMatchObject({ name: 'invoke_workflow traced', parentSpanId: '', status: { code: 1 } });
  expect(workflow!.resource['service.version']).toMatch(/^\d+\.\d+\.\d+/);
  const turns = byName(spans, 'invoke_agent');
  expect(turns.map((t) => t.name).sort()).toEqual(
    run.events
      .filter((e) => e.type === 'turn_started')
      .map((e) => `invoke_agent ${e.agent}`)
      .sort(),
  );
  for (const t of turns) expect(t.parentSpanId).toBe(workflow!.spanId);
  const chats = byName(spans, 'chat ');
  expect(chats).toHaveLength(run.events.filter((e) => e.type === 'model_call').length);
  for (const c of chats) {
    expect(turns.map((t) => t.spanId)).toContain(c.parentSpanId);
    expect(c.kind).toBe(3); // CLIENT
    expect(c.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.request.model': 'claude-opus-4-5-20251101',
    });
    expect(c.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(c.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(typeof c.attributes['conclave.cost_usd']).toBe('number');
    expect(c.endNs).toBeGreaterThanOrEqual(c.startNs);
  }
  const [tool] = byName(spans, 'execute_tool read_file');
  expect(tool!.attributes['gen_ai.tool.call.id']).toMatch(/^toolu_/);
  expect(turns.find((t) => t.spanId === tool!.parentSpanId)!.name).toBe('invoke_agent helper');
  const [proposal] = byName(spans, 'proposal ship');
  expect(proposal).toMatchObject({ parentSpanId: workflow!.spanId, events: ['vote'] });
  expect(proposal!.attributes['conclave.proposal.winner']).toBe('yes');
  // Every span lies within the run's.
  for (const s of spans) expect(s.startNs >= workflow!.startNs && s.endNs <= workflow!.endNs, s.name).toBe(true);
}

describe('OpenTelemetry traces', () => {
  it('sends a multi-agent run live over OTLP/HTTP protobuf: one trace, every model call under an agent turn with its usage', async () => {
    const run = await tracedRun({ OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=otlp-key-of-the-backend', OTEL_SERVICE_NAME: 'review-bot' });
    expect(run.code, `${run.json.reason}\n${run.stderr}`).toBe(0);
    expect(receiver.requests.every((r) => r.contentType === 'application/x-protobuf' && r.headers['x-api-key'] === 'otlp-key-of-the-backend')).toBe(true);
    expect(receiver.spans.every((s) => s.resource['service.name'] === 'review-bot')).toBe(true);
    expectShape(receiver.spans, run);
  });

  it('conclave trace gives the same spans from the session file, twice, as JSON and over http/json, with no secret even with --trace-content', async () => {
    const run = await tracedRun({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, ['--trace-content']);
    expect(run.code).toBe(0);
    expect(receiver.requests.every((r) => r.contentType === 'application/json')).toBe(true);
    const live = [...receiver.spans];
    const session = run.json.session as string;
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: '', ANTHROPIC_API_KEY: '' };
    for (const round of [1, 2]) {
      receiver.spans.length = 0;
      const sent = await conclave(['trace', session, '--otlp', receiver.url, '--trace-content'], { cwd: run.dir, env });
      expect(sent.stderr).toBe('');
      expect(sent.stdout).toMatch(new RegExp(`^sent ${live.length} spans of trace ${live[0]!.traceId} \\(http/protobuf\\)\\n$`));
      expect(ids(receiver.spans), `export ${round}`).toEqual(ids(live));
      expect(times(receiver.spans), `export ${round}: times`).toEqual(times(live));
      expectShape(receiver.spans, run);
    }
    const printed = await conclave(['trace', session, '--format', 'json', '--trace-content'], { cwd: run.dir, env });
    expect(printed.code).toBe(0);
    const fromFile = fromJson(JSON.parse(printed.stdout));
    expect(ids(fromFile)).toEqual(ids(live));
    expect(fromFile.every((s) => s.resource['service.name'] === 'conclave')).toBe(true);
    // Content is there when asked for, and masked.
    const helperChat = fromFile.find((s) => s.name.startsWith('chat') && String(s.attributes['gen_ai.output.messages']).includes('it says'));
    expect(String(helperChat!.attributes['gen_ai.output.messages'])).toContain('it says ***');
    expect(JSON.stringify(byName(fromFile, 'execute_tool')[0]!.attributes)).toContain('the notes mention ***');
    for (const text of [printed.stdout, JSON.stringify(live, (_k, v) => (typeof v === 'bigint' ? String(v) : v))]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(TEST_API_KEY);
    }
    // Without --trace-content, no prompt, completion or tool output at all.
    const plain = fromJson(JSON.parse((await conclave(['trace', session, '--format', 'json'], { cwd: run.dir, env })).stdout));
    expect(plain.flatMap((s) => Object.keys(s.attributes)).filter((k) => /^gen_ai\..*(messages|arguments|result)/.test(k))).toEqual([]);
  });

  it('goes on without traces when the collector is down: said once, the run as fast and its result the same', async () => {
    const started = Date.now();
    const run = await tracedRun({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    // A generous bound that catches a run waiting on the collector's timeout (10 s by default).
    expect(Date.now() - started).toBeLessThan(6_000);
    expect(run.code).toBe(0);
    expect(run.json.status).toBe('success');
    expect(run.stderr.match(/traces: the collector at http:\/\/127\.0\.0\.1:9 did not/g)).toHaveLength(1);
    const notUrl = await conclave(['run', 'workflow.yml', '-i', `token=${SECRET}`, '--quiet', '--session', 'not-url.jsonl'], {
      cwd: run.dir,
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY, OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
    });
    expect(notUrl.stderr).toBe(
      'conclave: warning: traces: the OTLP endpoint "collector:4318" is not an http:// or https:// URL; the run goes on without traces\n',
    );
    const refused = await conclave(['trace', run.json.session as string, '--otlp', 'http://127.0.0.1:9'], {
      cwd: run.dir,
      env: { OTEL_EXPORTER_OTLP_TIMEOUT: '1000' },
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^conclave: the collector at http:\/\/127\.0\.0\.1:9 did not take the spans: .+\n$/);
    // A collector URL with credentials, given as --otlp or in the environment: scheme, host and port shown, nothing else.
    for (const [args, env] of [
      [['--otlp', 'http://user:hunter2-collector@127.0.0.1:9/x?api_key=k3y-in-the-query'], {}],
      [[], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://user:hunter2-collector@127.0.0.1:9/x?api_key=k3y-in-the-query' }],
    ] as const) {
      const failed = await conclave(['trace', run.json.session as string, ...args], { cwd: run.dir, env: { OTEL_EXPORTER_OTLP_TIMEOUT: '1000', ...env } });
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/^conclave: the collector at http:\/\/127\.0\.0\.1:9 did not take the spans: /);
      expect(failed.stderr).not.toMatch(/hunter2|k3y-in-the-query|user:/);
    }
    const nowhere = await conclave(['trace', run.json.session as string], { cwd: run.dir, env: { OTEL_EXPORTER_OTLP_ENDPOINT: '' } });
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toContain('say where the spans go: --otlp URL');
    const bad = await conclave(['trace', run.json.session as string, '--otlp', 'localhost:4318'], { cwd: run.dir });
    expect([bad.code, bad.stderr]).toEqual([
      2,
      'conclave: --otlp must be an http:// or https:// URL of an OTLP/HTTP collector, such as http://localhost:4318; not "localhost:4318"\n',
    ]);
    const both = await conclave(['trace', run.json.session as string, '--otlp', 'http://x', '--format', 'json'], { cwd: run.dir });
    expect(both.code).toBe(2);
    const broken = await conclave(['trace', 'missing.jsonl'], { cwd: run.dir });
    expect(broken.code).toBe(2);
    expect(broken.stderr).not.toMatch(/\n\s+at /);
  });

  it('draws a Mermaid timeline in show --format markdown and the job summary, waits included, and says what the prompt cache saved', async () => {
    server = await startFakeAnthropic(
      {
        ...fanOutScript(4),
        lead: (r) => ({
          ...(fanOutScript(4).lead as (x: typeof r) => object)(r),
          usage: { input_tokens: 100, output_tokens: 10, cache_read_input_tokens: 20_000 },
        }),
      },
      { rateLimits: { requests: { limit: 2, windowMs: 1_000 } } },
    );
    const summary = join(mkdtempSync(join(tmpdir(), 'conclave-summary-')), 'summary.md');
    writeFileSync(summary, '');
    const run = await runWorkflow(server, FAN_OUT(4), [], { env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary, GITHUB_OUTPUT: '' } });
    expect(run.code).toBe(0);
    const shown = await conclave(['show', run.json.session as string, '--format', 'markdown'], { cwd: run.dir });
    for (const markdown of [shown.stdout, readFileSync(summary, 'utf8')]) {
      const chart = /```mermaid\n([\s\S]*?)```/.exec(markdown)?.[1];
      expect(chart).toBeDefined();
      await expect(mermaid.parse(chart!)).resolves.toMatchObject({ diagramType: 'gantt' });
      expect(chart).toMatch(/section lead\n {2}turn 1 : \d{13}, \d{13}\n/);
      expect(chart).toContain('section reviewer-4');
      expect(chart).toMatch(/ {2}wait requests : active, \d{13}, \d{13}/);
      expect(markdown).toMatch(/Prompt cache: [\d,]+ input tokens read from it, 0 written; \$[\d.]+ saved against no cache/);
      expect(markdown).toContain('| agent | turns | calls | input tokens | cache read | cache written | output tokens | cost |');
    }
    const text = await conclave(['show', run.json.session as string], { cwd: run.dir });
    expect(text.stdout).toMatch(/\n {2}Prompt cache: [\d,]+ input tokens read from it/);
  });

  it('continues the same trace when a run cut short by a limit is resumed; SIGTERM still sends the spans before the exit', async () => {
    const run = await tracedRun({}, ['--max-turns', '2']);
    expect(run.code).toBe(3);
    receiver.spans.forEach((s) => live.set(s.spanId, s));
    const first = new Set(receiver.spans.map((s) => s.traceId));
    const resumed = await conclave(['resume', run.json.session as string, '--max-turns', '20', '-i', `token=${SECRET}`, '--json'], {
      cwd: run.dir,
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
    });
    expect(resumed.code).toBe(0);
    expect(new Set(receiver.spans.map((s) => s.traceId))).toEqual(first);
    // The resumed process sent the new turns' spans; together they are the session's spans.
    receiver.spans.splice(0).forEach((s) => live.set(s.spanId, s));
    expect(live.size).toBeGreaterThan(0);
    const fromFile = fromJson(JSON.parse((await conclave(['trace', run.json.session as string, '--format', 'json'], { cwd: run.dir })).stdout));
    expect([...live.keys()].sort()).toEqual(fromFile.map((s) => s.spanId).sort());

    // A run stopped by SIGTERM in the middle of a model call.
    const hanging = await startFakeAnthropic({ lead: [{ hang: true }] });
    const child = spawn(NODE, [BIN, 'run', 'workflow.yml', '-i', `token=${SECRET}`, '--quiet'], {
      cwd: run.dir,
      env: { ...process.env, ANTHROPIC_BASE_URL: hanging.url, ANTHROPIC_API_KEY: TEST_API_KEY, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
      stdio: 'ignore',
    });
    while (hanging.requests.length === 0) await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    await hanging.close();
    expect(code).not.toBe(0);
    const [workflow] = byName(receiver.spans, 'invoke_workflow');
    expect(workflow).toMatchObject({ status: { code: 2 } });
    expect(workflow!.attributes['conclave.status']).toBeDefined();
    expect(byName(receiver.spans, 'invoke_agent lead')).toHaveLength(1);
  });

  it('puts spawned agents under the turn of their spawner', async () => {
    server = await startFakeAnthropic(fanOutScript(3));
    receiver = await startOtlpReceiver();
    const run = await runWorkflow(server, FAN_OUT(3), [], { env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } });
    expect(run.code).toBe(0);
    const spans = receiver.spans;
    const leadFirst = spans.find((s) => s.name === 'invoke_agent lead' && s.attributes['conclave.turn'] === 1)!;
    const reviewers = byName(spans, 'invoke_agent reviewer-');
    expect(reviewers).toHaveLength(3);
    for (const r of reviewers) expect(r.parentSpanId).toBe(leadFirst.spanId);
    expect(leadFirst.events.filter((e) => e === 'agent_spawned')).toHaveLength(3);
  });

  it.each([
    ['refused (400)', { status: 400, type: 'invalid_request_error', message: 'max_tokens: too large' }, 'request', 1],
    ['an outage after its retries (529)', { status: 529, type: 'overloaded_error', message: 'Overloaded', retryAfterMs: 0 }, 'outage', 4],
  ] as const)('a model call that failed, %s, is a chat span with its error, live and from the file', async (_what, error, kind, exitCode) => {
    server = await startFakeAnthropic({ lead: () => ({ error: { ...error } }) });
    receiver = await startOtlpReceiver();
    const run = await runWorkflow(server, 'name: failing\nagents:\n  lead: { role: manager }\nkickoff: Go.\n', [], {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
    });
    expect(run.code, run.stderr).toBe(exitCode);
    expect(
      run.events.find((e) => e.type === 'turn_failed'),
      'the session records the failed call',
    ).toMatchObject({ call: { step: 1, model: 'claude-sonnet-5-5', kind, status: error.status } });
    for (const spans of [
      receiver.spans,
      fromJson(JSON.parse((await conclave(['trace', run.json.session as string, '--format', 'json'], { cwd: run.dir })).stdout)),
    ]) {
      const chats = byName(spans, 'chat ');
      expect(chats, 'one chat span for the failed call').toHaveLength(1);
      expect(chats[0]).toMatchObject({ status: { code: 2 }, attributes: { 'error.type': kind } });
      expect(chats[0]!.parentSpanId).toBe(byName(spans, 'invoke_agent lead')[0]!.spanId);
    }
  });
});
