import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, startFakeAnthropic, type FakeAnthropic, type RecordedRequest } from '../fake-anthropic/server.js';
import { FAN_OUT, fanOutScript } from '../fixtures/fan-out.js';
import { diffOf, OWN, REVIEWERS, reviewScript, SHARED } from '../fixtures/review-team.js';
import { conclave } from '../helpers/cli.js';
import { fromJson } from '../helpers/otlp-receiver.js';
import { runWorkflow, TEST_API_KEY, type WorkflowRun } from '../helpers/run-workflow.js';

/** From the first reviewer's request to the last reviewer's answer, by the fake API's clock. */
function reviewersSpan(server: FakeAnthropic): number {
  const reviewers = server.requests.filter((r) => r.agent.startsWith('reviewer-'));
  return Math.max(...reviewers.map((r) => r.answeredAt!)) - Math.min(...reviewers.map((r) => r.receivedAt));
}

const LATENCY_MS = 1_000;
const CONTEXT_TOKENS = 20_000;

let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function review(workflow: string, args: string[] = []): Promise<{ run: WorkflowRun; server: FakeAnthropic }> {
  server = await startFakeAnthropic(reviewScript(), { latencyMs: LATENCY_MS, promptCache: { minTokens: 1024 } });
  const run = await runWorkflow(server, workflow, args, { files: { 'change.diff': diffOf(CONTEXT_TOKENS) } });
  return { run, server };
}

/** The requests that wrote the entry ending at the context block (the first system block). */
const contextWrites = (requests: RecordedRequest[]) =>
  requests.flatMap((r) => (r.cache?.writes ?? []).filter((w) => w.part === 'system' && w.index === 0).map((w) => ({ agent: r.agent, ...w })));

describe('a context the team shares, paid for about once', () => {
  it('1+16 reviewers: the context written once, by the lead, and read by every reviewer, the run at most 20 % of the same review with the diff in each system prompt', async () => {
    const own = await review(OWN);
    expect(own.run.code, own.run.stderr).toBe(0);
    const ownCost = own.run.json.usage.cost_usd as number;
    const ownSpan = reviewersSpan(own.server);
    await own.server.close();

    const shared = await review(SHARED);
    expect(shared.run.code, shared.run.stderr).toBe(0);
    const requests = shared.server.requests;
    // Every agent's prompt begins with the context, in a block of its own with a breakpoint.
    for (const r of requests) {
      const system = r.body.system as { text: string; cache_control?: unknown }[];
      expect(system[0]!.text).toContain('The change under review:');
      expect(system[0]!.cache_control).toEqual({ type: 'ephemeral' });
      expect(system.at(-1)!.text).toContain(`You are @${r.agent},`);
    }
    // Written once, by the lead: every agent of a context is sent the same tools (shared-tools.test.ts).
    const writes = contextWrites(requests);
    expect(writes.map((w) => w.agent)).toEqual(['lead']);
    const contextTokens = writes[0]!.prefixTokens;
    expect(contextTokens).toBeGreaterThan(CONTEXT_TOKENS);
    const written = requests.reduce((sum, r) => sum + r.cache!.written, 0);
    const read = requests.reduce((sum, r) => sum + r.cache!.read, 0);
    // Each agent also writes its own part (instructions, preamble, messages): small beside the context.
    expect(written).toBeLessThanOrEqual(contextTokens + 17 * 2_000);
    // Every reviewer reads it.
    expect(requests.filter((r) => r.agent.startsWith('reviewer-') && r.cache!.read >= contextTokens - 1_000)).toHaveLength(REVIEWERS);
    expect(read).toBeGreaterThanOrEqual(REVIEWERS * CONTEXT_TOKENS);

    const sharedCost = shared.run.json.usage.cost_usd as number;
    expect(sharedCost / ownCost).toBeLessThanOrEqual(0.2);
    // Warm first costs one answer's start: the first reviewer's, which the others wait for. A bound
    // that holds on a loaded machine (the benchmark measures it: docs/BENCHMARKS.md).
    expect(reviewersSpan(shared.server) - ownSpan).toBeLessThanOrEqual(LATENCY_MS * 2);

    // What the cache read, wrote and saved, in --json.
    const cache = shared.run.json.prompt_cache as { read_tokens: number; written_tokens: number; saved_usd: number };
    expect(cache.read_tokens).toBe(read);
    expect(cache.written_tokens).toBe(written);
    expect(cache.saved_usd).toBeGreaterThan(0);

    // The trace's workflow span says the same, from the session file.
    const traced = await conclave(['trace', shared.run.json.session as unknown as string, '--format', 'json'], {
      cwd: shared.run.dir,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: '' },
    });
    const [workflowSpan] = fromJson(JSON.parse(traced.stdout)).filter((span) => span.name.startsWith('invoke_workflow'));
    expect(workflowSpan!.attributes).toMatchObject({
      'conclave.prompt_cache.read_tokens': read,
      'conclave.prompt_cache.written_tokens': written,
    });
    expect(workflowSpan!.attributes['conclave.prompt_cache.saved_usd']).toBeCloseTo(cache.saved_usd, 4);

    // The context is kept in the session once, not once per agent.
    const session = readFileSync(join(shared.run.dir, shared.run.json.session as unknown as string), 'utf8');
    const marker = 'line 777 of the change';
    expect(session.split(marker).length - 1).toBe(2); // the setup step's output, and one shared_text
    const ownSession = readFileSync(join(own.run.dir, own.run.json.session as unknown as string), 'utf8');
    expect(ownSession.split(marker).length - 1).toBeGreaterThan(REVIEWERS);
    expect(shared.run.events.filter((e) => e.type === 'shared_text')).toHaveLength(1);

    // --replay answers every call from the recording: the same run, offline.
    const replay = await conclave(['run', 'workflow.yml', '--replay', shared.run.json.session as unknown as string, '--json'], {
      cwd: shared.run.dir,
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout).usage.cost_usd).toBe(sharedCost);
  });
});

/** The review's workflow with fewer reviewers and `extra` at the top level. */
const smaller = (workflow: string, reviewers: number, extra = '') =>
  workflow
    .replace(/for_each: \[[^\]]*\]/, `for_each: [${Array.from({ length: reviewers }, (_, i) => i + 1).join(', ')}]`)
    .replace('setup:', `${extra}\nsetup:`);

describe('the shared context through a run', () => {
  it('cache: { ttl: 1h }: every breakpoint kept an hour, its writes priced at 2× the input price, and show says what the cache saved', async () => {
    // The lead finds nothing to hand out: its one call writes the context for an hour, and nobody reads it.
    server = await startFakeAnthropic({ lead: () => ({ text: 'Nothing to review.' }) }, { latencyMs: 300, promptCache: { minTokens: 1024 } });
    const run = await runWorkflow(server, smaller(SHARED, 2, 'cache: { ttl: 1h }'), [], { files: { 'change.diff': diffOf(5_000) } });
    expect(server.requests).toHaveLength(1);
    expect(run.code, run.stderr).toBe(0);
    for (const r of server.requests) {
      const marks = JSON.stringify(r.body).match(/"cache_control":\{[^}]*\}/g) ?? [];
      expect(marks.length).toBeGreaterThanOrEqual(3);
      expect(marks.length).toBeLessThanOrEqual(4);
      for (const mark of marks) expect(mark).toBe('"cache_control":{"type":"ephemeral","ttl":"1h"}');
      expect(r.cache!.written1h).toBe(r.cache!.written);
    }
    // claude-sonnet-5-5: $2 input, $10 output per million; an hour's write $4, a read $0.20.
    const expected = server.requests.reduce((sum, r) => {
      const u = (r.cache!.read * 0.2 + r.cache!.written * 4) / 1e6;
      return sum + u;
    }, 0);
    const usage = run.json.usage as unknown as { input_tokens: number; output_tokens: number; cost_usd: number };
    expect(usage.cost_usd).toBeCloseTo(expected + (usage.input_tokens * 2 + usage.output_tokens * 10) / 1e6, 6);
    expect(run.events.find((e) => e.type === 'run_started')).toMatchObject({ cache_ttl: '1h' });
    const show = await conclave(['show', run.json.session as unknown as string], { cwd: run.dir });
    // A write nobody reads does not repay what an hour's write costs more: show says so, as --json does.
    const cache = run.json.prompt_cache as unknown as { read_tokens: number; written_tokens: number; saved_usd: number };
    expect(cache.saved_usd).toBeLessThan(0);
    expect(show.stdout).toContain(
      `Prompt cache: ${cache.read_tokens.toLocaleString('en-US')} input tokens read from it, ${cache.written_tokens.toLocaleString('en-US')} written; ` +
        `$${(-cache.saved_usd).toFixed(4)} more than with no cache (list prices)`,
    );
  });

  it('a run stopped by a limit resumes with the context kept once, and replays offline', async () => {
    server = await startFakeAnthropic(reviewScript(4), { latencyMs: 200, promptCache: { minTokens: 1024 } });
    const stopped = await runWorkflow(server, smaller(SHARED, 4, 'limits: { max_turns: 3 }'), [], { files: { 'change.diff': diffOf(5_000) } });
    expect(stopped.code, stopped.stderr).toBe(3);
    const session = stopped.json.session as unknown as string;
    await server.close();
    server = await startFakeAnthropic(reviewScript(4), { latencyMs: 200, promptCache: { minTokens: 1024 } });
    const resumed = await conclave(['resume', session, '--max-turns', '20', '--json'], {
      cwd: stopped.dir,
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    // The resumed calls still begin with the context, and read it from the cache once one wrote it.
    for (const r of server.requests) expect((r.body.system as { text: string }[])[0]!.text).toContain('The change under review:');
    const text = readFileSync(join(stopped.dir, session), 'utf8');
    expect(text.split('"type":"shared_text"').length - 1).toBe(1);
    const replay = await conclave(['run', 'workflow.yml', '--replay', session, '--json'], {
      cwd: stopped.dir,
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout).usage.cost_usd).toBe(JSON.parse(resumed.stdout).usage.cost_usd);
  });

  it('a context shorter than the model can cache: no call waits for another', async () => {
    server = await startFakeAnthropic(reviewScript(4), { latencyMs: 1_000, promptCache: { minTokens: 1024 } });
    const run = await runWorkflow(server, smaller(SHARED, 4), [], { files: { 'change.diff': 'a one-line change' } });
    expect(run.code, run.stderr).toBe(0);
    const reviewers = server.requests.filter((r) => r.agent.startsWith('reviewer-'));
    // They left together: the last within the first one's answer time, none waited for it.
    const received = reviewers.map((r) => r.receivedAt);
    expect(Math.max(...received) - Math.min(...received)).toBeLessThan(1_000);
    expect(reviewers.every((r) => r.cache!.read === 0)).toBe(true);
  });
});

describe('spawned agents share the context too', () => {
  it("a lead spawning 8 reviewers of a template at once: the lead writes the context, and all 8 read it; the template's instructions come before each one's name", async () => {
    server = await startFakeAnthropic(fanOutScript(8), { latencyMs: 500, promptCache: { minTokens: 1024 } });
    const workflow = FAN_OUT(8).replace(
      'defaults:',
      'setup:\n  - { id: diff, run: cat change.diff, max_output: 1MB }\ncontext: "$<< setup.diff >>"\ndefaults:',
    );
    const run = await runWorkflow(server, workflow, [], { files: { 'change.diff': diffOf(8_000) } });
    expect(run.code, run.stderr).toBe(0);
    const reviewers = server.requests.filter((r) => r.agent.startsWith('reviewer-'));
    expect(reviewers).toHaveLength(8);
    for (const r of reviewers) {
      const system = r.body.system as { text: string }[];
      expect(system.map((b) => b.text.slice(0, 30))).toEqual([
        system[0]!.text.slice(0, 30),
        'Your instructions:\nReview the ',
        `You are @${r.agent}, a worker who`.slice(0, 30),
      ]);
    }
    expect(contextWrites(server.requests).map((w) => w.agent)).toEqual(['lead']);
    expect(reviewers.filter((r) => r.cache!.read > 8_000)).toHaveLength(8);
  });
});

describe('context: and cache: in a workflow file', () => {
  it('validate says where a context reads what does not exist and where a ttl is not one the API keeps', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-context-'));
    writeFileSync(join(dir, 'w.yml'), 'name: x\ncontext: "Shared $<< inputs.nope >>"\ncache: { ttl: 2h }\nagents: { a: { role: manager } }\nkickoff: k\n');
    const checked = await conclave(['validate', 'w.yml'], { cwd: dir });
    expect(checked.code).toBe(2);
    expect(checked.stdout + checked.stderr).toContain('w.yml:2:22: input "nope" is not declared');
    expect(checked.stdout + checked.stderr).toContain('w.yml:3:15: cache.ttl must be "5m" or "1h"; found the string "2h" (did you mean "1h"?)');
  });
});

/** The review with a lead and reviewers that grep, and @sec set by `sec` (its tools, its speed). */
const withSec = (sec: string) =>
  SHARED.replace('for_each: [', 'tools: [grep]\n    for_each: [')
    .replace('role: manager\n', 'role: manager\n    tools: [grep]\n')
    .replace('kickoff:', `  sec:\n    role: worker\n    ${sec}\n    system: Look for security problems.\nkickoff:`);

/** That review run against the fake API with its prompt cache: the lead asks the reviewers and @sec, who answer. */
async function reviewWithSec(workflow: string): Promise<WorkflowRun> {
  const lead = (r: RecordedRequest) => (lastUserText(r).includes('problem found') ? { text: 'All reviewed.' } : { text: '@reviewer @sec review your part.' });
  server = await startFakeAnthropic(
    { ...reviewScript(REVIEWERS), lead, sec: () => ({ text: '@lead no security problem found.' }) },
    { promptCache: { minTokens: 1024 } },
  );
  const run = await runWorkflow(server, workflow, [], { files: { 'change.diff': diffOf(CONTEXT_TOKENS) } });
  expect(run.code, run.stderr).toBe(0);
  return run;
}

describe('a worker whose tools differ from the others', () => {
  it("validate says it will write the context again; the run shows it, and the API's diagnosis names @sec with tools_changed in --json, show and a replay", async () => {
    const workflow = withSec('tools: [grep, read_file, list_files]');
    const dir = mkdtempSync(join(tmpdir(), 'conclave-context-'));
    writeFileSync(join(dir, 'w.yml'), workflow);
    const checked = await conclave(['validate', 'w.yml'], { cwd: dir });
    expect(checked.code, checked.stdout).toBe(0);
    expect(checked.stdout).toMatch(
      /w\.yml:\d+:3: warning: with context:, @sec gives the model other tools \(grep, list_files, read_file\) than @lead, @reviewer × \d+ \(grep\): tools come first/,
    );
    const run = await reviewWithSec(workflow);
    const first = (agent: string) => server!.of(agent)[0]!.cache!;
    expect(first('sec').written).toBeGreaterThan(CONTEXT_TOKENS / 2);
    const readers = server.requests.filter((r) => r.agent.startsWith('reviewer-') && r.cache!.read > CONTEXT_TOKENS / 2);
    expect(readers.length).toBeGreaterThanOrEqual(REVIEWERS - 1);

    // The API's cache diagnosis says why (issue 71): @sec's prompt, compared with the answer that wrote the team's prefix (the lead's), changed its tools.
    const secRequest = server.of('sec')[0]!;
    expect((secRequest.body as { diagnostics?: unknown }).diagnostics).toEqual({ previous_message_id: server.of('lead')[0]!.responseId });
    expect(secRequest.headers['anthropic-beta']).toBeUndefined();
    const misses = (run.json.usage as { cache_misses: { agent: string; reason: string; missed_tokens: number }[] }).cache_misses;
    expect(misses).toEqual([{ agent: 'sec', reason: 'tools_changed', missed_tokens: expect.any(Number) }]);
    expect(misses[0]!.missed_tokens).toBeGreaterThan(CONTEXT_TOKENS / 2);
    // No request more than the calls the session records.
    expect(server.requests).toHaveLength(run.events.filter((e) => e.type === 'model_call').length);
    const session = join(run.dir, run.json.session as string);
    const shown = await conclave(['show', session], { cwd: run.dir });
    expect(shown.stdout).toMatch(/Cache miss: @sec, tools changed: [\d,]+ tokens not read from the cache; give @sec the same tools/);
    const replay = await conclave(['run', 'workflow.yml', '--replay', session, '--json'], { cwd: run.dir });
    expect(replay.code, replay.stderr).toBe(0);
    expect((JSON.parse(replay.stdout) as { usage: { cache_misses: unknown } }).usage.cache_misses).toEqual(misses);
  });
});

describe('a worker in fast mode (docs/api-controls.md: speed)', () => {
  it("writes its own prefix: the API's diagnosis names @sec with speed_changed, and show says what to change", async () => {
    const workflow = withSec('tools: [grep]\n    speed: fast');
    const run = await reviewWithSec(workflow);
    expect(server.of('sec')[0]!.cache!.written).toBeGreaterThan(CONTEXT_TOKENS / 2);
    const misses = (run.json.usage as { cache_misses: { agent: string; reason: string; missed_tokens: number }[] }).cache_misses;
    expect(misses).toEqual([{ agent: 'sec', reason: 'speed_changed', missed_tokens: expect.any(Number) }]);
    const shown = await conclave(['show', join(run.dir, run.json.session as string)], { cwd: run.dir });
    expect(shown.stdout).toMatch(/Cache miss: @sec, speed changed: [\d,]+ tokens not read from the cache; give @sec the same speed: as the agents/);
  });
});

describe('the cache diagnosis read with usage (issue 84)', () => {
  it('a lead with no tools, four grep reviewers, @sec with three tools: usage.cache_misses names @rev-1 and @sec only; no request carries a deprecated beta header', async () => {
    const workflow = SHARED.replace(/for_each: \[[^\]]*\]/, 'tools: [grep]\n    for_each: [1, 2, 3, 4]').replace(
      'kickoff:',
      '  sec:\n    role: worker\n    tools: [grep, read_file, list_files]\n    system: Look for security problems.\nkickoff:',
    );
    const lead = (r: RecordedRequest) => (lastUserText(r).includes('problem found') ? { text: 'All reviewed.' } : { text: '@reviewer @sec review your part.' });
    server = await startFakeAnthropic(
      { ...reviewScript(4), lead, sec: () => ({ text: '@lead no security problem found.' }) },
      { promptCache: { minTokens: 1024 } },
    );
    const run = await runWorkflow(server, workflow, [], { files: { 'change.diff': diffOf(CONTEXT_TOKENS) } });
    expect(run.code, run.stderr).toBe(0);
    // The API compares each first call with the lead's, whose tools differ: it names every reviewer, though three read what the first wrote.
    const told = server.requests.filter((r) => r.agent.startsWith('reviewer-') || r.agent === 'sec').map((r) => r.agent);
    expect(told.length).toBeGreaterThanOrEqual(5);
    const readers = server.requests.filter((r) => r.agent.startsWith('reviewer-') && r.cache!.read > CONTEXT_TOKENS / 2).map((r) => r.agent);
    expect(readers).toHaveLength(3);
    const writer = ['reviewer-1', 'reviewer-2', 'reviewer-3', 'reviewer-4'].find((a) => !readers.includes(a))!;
    const misses = (run.json.usage as { cache_misses: { agent: string; reason: string; missed_tokens: number }[] }).cache_misses;
    expect(misses.map((m) => m.agent).sort()).toEqual([writer, 'sec'].sort());
    for (const m of misses) expect(m).toMatchObject({ reason: 'tools_changed', missed_tokens: expect.any(Number) });
    for (const m of misses) expect(m.missed_tokens).toBeGreaterThan(CONTEXT_TOKENS / 2);
    for (const r of server.requests)
      expect(String(r.headers['anthropic-beta'] ?? ''), r.agent).not.toMatch(/cache-diagnosis|token-counting-2024|message-batches-2024/);
    // The same in show and the graders, from the session.
    const session = join(run.dir, run.json.session as string);
    const graded = await conclave(['grade', session, '--json'], { cwd: run.dir });
    expect(JSON.parse(graded.stdout).graders.cache_breaks).toMatchObject({ value: 2 });
  });
});

describe('a context longer than compact_at', () => {
  it('is not summarised away at every turn: the turns keep a quarter of compact_at above it', async () => {
    server = await startFakeAnthropic(reviewScript(2), { promptCache: { minTokens: 1024 } });
    const workflow = smaller(SHARED, 2, 'defaults: { compact_at: 4096 }');
    const run = await runWorkflow(server, workflow, [], { files: { 'change.diff': diffOf(8_000) } });
    expect(run.code, run.stderr).toBe(0);
    // The lead's second turn (the reviewers' answers) goes on from its first, with no summary call.
    expect(run.events.filter((e) => e.type === 'context_compacted')).toEqual([]);
    expect(server.of('lead')).toHaveLength(2);
    expect(JSON.stringify(server.of('lead')[1]!.body.messages)).toContain('@reviewer review your part.');
  });
});
