import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { diffOf, reviewScript, SHARED } from '../fixtures/review-team.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

/**
 * The shared context and Message Batches together (issue 51, item 3): the prompt cache serves
 * batched requests as the API does (the fake: what was written before the batch was created),
 * so the shared prefix is written before the batch, not once by each of its requests.
 */
let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const BATCHED = SHARED.replace('name: review\n', 'name: review\ndefaults: { batch: true }\n');
const files = { 'change.diff': diffOf(20_000) };
const costOf = (run: { json: Record<string, unknown> }) => (run.json.usage as { cost_usd: number }).cost_usd;
const serve = () => startFakeAnthropic(reviewScript(), { promptCache: { minTokens: 1024 }, batches: { endsAfterMs: 200 } });

function readEvents(dir: string, session: string): { type: string; [key: string]: unknown }[] {
  return readFileSync(join(dir, session), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line) as { type: string });
}

/** Every breakpoint a request carries, with its ttl. */
function breakpoints(body: unknown): string[] {
  const found: string[] = [];
  JSON.stringify(body, (key, value: unknown) => {
    if (key === 'cache_control') found.push((value as { ttl?: string }).ttl ?? '5m');
    return value;
  });
  return found;
}

describe('the shared context in batches', () => {
  it('the lead + 16 review: the batches read the context the first batch wrote, at most 55 % of `context:` alone', async () => {
    server = await serve();
    const alone = await runWorkflow(server, SHARED, [], { files });
    expect(alone.code, alone.stderr).toBe(0);
    await server.close();
    server = await serve();
    const batched = await runWorkflow(server, BATCHED, [], { files });
    expect(batched.code, batched.stderr).toBe(0);
    expect(server.requests.every((r) => r.batch !== undefined)).toBe(true);
    const reviewers = server.requests.filter((r) => r.agent.startsWith('reviewer-'));
    expect(reviewers).toHaveLength(16);
    // Each batched request keeps its breakpoints, and every reviewer read the context from the cache.
    for (const r of server.requests) expect(breakpoints(r.body).length).toBeGreaterThanOrEqual(2);
    // The lead's call wrote the context (every agent is sent the same tools), and every reviewer read it.
    expect(server.of('lead')[0]!.cache!.written).toBeGreaterThanOrEqual(20_000);
    expect(reviewers.filter((r) => r.cache!.read >= 20_000)).toHaveLength(16);
    const ratio = costOf(batched) / costOf(alone);
    expect(ratio).toBeLessThanOrEqual(0.55);
    expect((batched.json.prompt_cache as { read_tokens: number }).read_tokens).toBeGreaterThan(16 * 20_000);
  });

  it('calls that leave together with a prefix nobody wrote: one goes in a batch of its own, and the others read what it wrote', async () => {
    server = await serve();
    const direct = BATCHED.replace('kickoff: "@lead the change is ready."', 'kickoff: "@reviewer review your part."');
    const run = await runWorkflow(server, direct, [], { files });
    expect(run.code, run.stderr).toBe(0);
    expect(server.requests.every((r) => r.batch !== undefined)).toBe(true);
    const reviewers = server.requests.filter((r) => r.agent.startsWith('reviewer-'));
    expect(reviewers).toHaveLength(16);
    const first = server.batches[0]!;
    expect(first.requests).toHaveLength(1);
    const writer = reviewers.find((r) => r.batch === first.id)!;
    expect(writer.cache!.written).toBeGreaterThanOrEqual(20_000);
    // The others were sent once the first batch had ended, and each read the prefix it wrote.
    for (const r of reviewers.filter((q) => q !== writer)) {
      expect(r.receivedAt).toBeGreaterThanOrEqual(first.endsAt);
      expect(r.cache!.read).toBeGreaterThanOrEqual(20_000);
    }
  });

  it('--park: the breakpoints keep an hour (a resume comes later than 5 minutes), and the resumed batch reads the context', async () => {
    server = await startFakeAnthropic(reviewScript(), { promptCache: { minTokens: 1024 }, batches: { endsAfterMs: 1_500 } });
    const first = await runWorkflow(server, BATCHED, ['--park'], { files });
    expect(first.code, first.stderr).toBe(75);
    expect(first.events.find((e) => e.type === 'run_started')!.cache_ttl).toBe('1h');
    let last = first;
    for (let i = 0; i < 10 && last.code === 75; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1_600));
      const resumed = await conclave(['resume', first.json.session as unknown as string, '--json'], {
        cwd: first.dir,
        env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
      });
      last = { ...first, ...resumed, json: JSON.parse(resumed.stdout) };
    }
    expect(last.code, last.stderr + last.stdout).toBe(0);
    for (const r of server.requests) expect(new Set(breakpoints(r.body))).toEqual(new Set(['1h']));
    const reviewers = server.requests.filter((q) => q.agent.startsWith('reviewer-'));
    expect(reviewers.filter((r) => r.cache!.read >= 20_000)).toHaveLength(16);
    expect(server.of('lead')[0]!.cache!.written1h).toBeGreaterThanOrEqual(20_000);
    // Priced at the hour's write price (2× the input price, halved in a batch): the cost is the recorded calls'.
    const calls = readEvents(first.dir, first.json.session as unknown as string).filter((e) => e.type === 'model_call');
    const sum = calls.reduce((total, e) => total + (e.cost_usd as number), 0);
    expect(last.json.usage as { cost_usd: number }).toMatchObject({ cost_usd: expect.closeTo(sum, 5) });
    const writer = calls.find((e) => (e.response as { usage: { cache_read_input_tokens: number } }).usage.cache_read_input_tokens === 0)!;
    expect(writer.agent).toBe('lead');
    const usage = (writer.response as { usage: Record<string, number> }).usage;
    // The default model's list price ($2 in, $10 out per million), an hour's write 2× the input, all halved in a batch.
    const atHour = (usage.input_tokens! * 2 + usage.output_tokens! * 10 + usage.cache_creation_input_tokens! * 4) / 1e6 / 2;
    expect(writer.cost_usd).toBeCloseTo(atHour, 6);
  });
});
