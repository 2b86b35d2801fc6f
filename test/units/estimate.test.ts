import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { estimateCommand } from '../../src/cli/estimate/estimate-command.js';
import type { Estimate } from '../../src/engine/estimate/estimate.js';
import { CALLS_PER_TURN_AT_MOST } from '../../src/engine/estimate/estimate.js';
import { modelInfo } from '../../src/provider/models.js';
import { priceOf, worstCaseCost } from '../../src/provider/pricing.js';
import { type FakeAnthropic, startFakeAnthropic } from '../fake-anthropic/server.js';

/**
 * The estimate's arithmetic (docs/pricing.md: before a run), from source: the worst case each
 * agent's limits allow and what bounds the run's, the likely cost from counted prompts, a
 * for_each and a template by their instances, items not known. `conclave estimate` through the
 * CLI against recorded runs of 25 shapes: test/e2e/estimate.test.ts.
 */
let api: FakeAnthropic;
const saved = { ...process.env };
beforeAll(async () => {
  api = await startFakeAnthropic({});
});
afterAll(() => api.close());
afterEach(() => {
  process.env = { ...saved };
  vi.restoreAllMocks();
});

/** `conclave estimate` of `workflow` as JSON; `counted`: with a key, so that the fake API counts the prompts. */
async function estimate(workflow: string, args: { setup?: boolean; counted?: boolean; from?: string[] } = {}): Promise<Estimate> {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-estimate-unit-'));
  writeFileSync(join(dir, 'workflow.yml'), workflow);
  delete process.env.ANTHROPIC_API_KEY;
  if (args.counted) Object.assign(process.env, { ANTHROPIC_API_KEY: 'sk-ant-test-0123456789abcdef', ANTHROPIC_BASE_URL: api.url });
  let out = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => ((out += String(chunk)), true));
  const code = await estimateCommand(join(dir, 'workflow.yml'), {
    input: [],
    setup: args.setup ?? true,
    from: args.from ?? [],
    format: 'json',
    json: true,
    workspace: dir,
  });
  vi.restoreAllMocks();
  expect(code).toBe(0);
  return JSON.parse(out) as Estimate;
}

const PAIR = (limits = '') => `
name: pair
${limits}
agents:
  lead: { role: manager }
  helper: { role: worker }
kickoff: "@helper look at it."
`;

describe('the estimate of a run', () => {
  it("each agent's worst case is every turn it may take at a full window and max_tokens; the run's is their sum, bound by its turns", async () => {
    const one = await estimate(PAIR('limits: { max_turns_per_agent: 1, budget_usd: 1000 }'));
    const two = await estimate(PAIR('limits: { max_turns_per_agent: 2, budget_usd: 1000 }'));
    expect(one.worst_bound).toBe('turns');
    expect(one.agents.map((a) => a.kind)).toEqual(['agent', 'agent']);
    expect(one.agents.map((a) => a.instances)).toEqual([1, 1]);
    expect(one.worst_usd).toBeCloseTo(one.agents[0]!.worst_usd + one.agents[1]!.worst_usd, 9);
    expect(two.agents[0]!.worst_usd).toBeCloseTo(2 * one.agents[0]!.worst_usd, 9);
    expect(CALLS_PER_TURN_AT_MOST).toBeGreaterThan(1);
    // The likely cost is a part of it, one turn per message each agent will get.
    expect(one.likely_usd).toBeGreaterThan(0);
    expect(one.likely_usd).toBeLessThan(one.worst_usd);
    expect(one.agents.every((a) => a.turns_from === 'messages' && a.counted === 'length' && !a.batched)).toBe(true);
    expect(one.sessions).toBe(0);
    expect(one.per_item_usd).toBe(0);
  });

  it('a budget below that sum binds it; so does max_tokens_total at the dearest price a token has', async () => {
    const budget = await estimate(PAIR('limits: { budget_usd: 0.5 }'));
    expect(budget.worst_bound).toBe('budget_usd');
    expect(budget.worst_usd).toBe(0.5);
    expect(budget.agents.every((a) => a.worst_usd <= 0.5)).toBe(true);
    expect(budget.likely_usd).toBeLessThanOrEqual(0.5);
    const tokens = await estimate(PAIR('limits: { budget_usd: 1000, max_tokens_total: 1000 }'));
    expect(tokens.worst_bound).toBe('max_tokens_total');
    expect(tokens.worst_usd).toBeGreaterThan(0);
    expect(tokens.worst_usd).toBeLessThan(1);
  });

  it('a for_each counts as its instances; its items unknown (no setup), its figures are per item, out of the totals', async () => {
    const workflow = `
name: each
limits: { budget_usd: 1000, max_turns_per_agent: 1 }
setup:
  - id: files
    run: printf 'a\\nb\\nc\\n'
agents:
  lead: { role: manager }
  reviewer: { role: worker, for_each: "$<< lines(setup.files) >>", system: "Review $<< item >>." }
kickoff: "@lead go."
`;
    const known = await estimate(workflow);
    const row = known.agents.find((a) => a.name === 'reviewer')!;
    expect(row).toMatchObject({ kind: 'for_each', instances: 3 });
    const lead = known.agents.find((a) => a.name === 'lead')!;
    expect(row.worst_usd).toBeCloseTo(3 * lead.worst_usd, 6);
    const unknown = await estimate(workflow, { setup: false });
    const perItem = unknown.agents.find((a) => a.name === 'reviewer')!;
    expect(perItem.instances).toBeNull();
    expect(unknown.per_item_usd).toBeCloseTo(perItem.likely_usd, 9);
    expect(unknown.likely_usd).toBeCloseTo(unknown.agents.find((a) => a.name === 'lead')!.likely_usd, 9);
  });

  it('prompts are counted by the API where it can count, else from their length', async () => {
    const before = api.requests.length;
    const counted = await estimate(PAIR(), { counted: true });
    expect(counted.agents.every((a) => a.counted === 'exact')).toBe(true);
    expect(api.requests.length).toBe(before); // counting is not a model call
    const long = await estimate(PAIR());
    expect(long.agents.every((a) => a.counted === 'length')).toBe(true);
  });

  it('a batched agent is marked and costs half as likely', async () => {
    const plain = await estimate(PAIR('limits: { budget_usd: 1000 }'));
    const batched = await estimate(PAIR('limits: { budget_usd: 1000 }').replace('helper: { role: worker }', 'helper: { role: worker, batch: true }'));
    const helper = (e: Estimate) => e.agents.find((a) => a.name === 'helper')!;
    expect(helper(batched).batched).toBe(true);
    expect(helper(batched).likely_usd).toBeCloseTo(helper(plain).likely_usd / 2, 6);
  });

  it("an agent's worst is its turns × the most calls a turn makes × a call at a full window and its max_tokens", async () => {
    const e = await estimate(`
name: one
limits: { budget_usd: 100000, max_turns_per_agent: 3 }
agents:
  lead: { role: manager, model: claude-haiku-4-5, max_tokens: 1000 }
kickoff: Go.
`);
    const perCall = worstCaseCost(modelInfo('claude-haiku-4-5').window, 1000, priceOf('claude-haiku-4-5').price);
    expect(e.agents[0]!.worst_usd).toBeCloseTo(3 * CALLS_PER_TURN_AT_MOST * perCall, 9);
  });

  it('a template counts as the instances it is expected to have, at worst as many as max_agents lets in', async () => {
    const e = await estimate(`
name: spawn
limits: { budget_usd: 100000, max_turns_per_agent: 1, max_agents: 6 }
agents:
  lead: { role: manager, spawns: [reviewer] }
templates:
  reviewer: { role: worker, system: "Review one file." }
kickoff: "@lead spawn a reviewer per file."
`);
    const row = e.agents.find((a) => a.name === 'reviewer')!;
    const lead = e.agents.find((a) => a.name === 'lead')!;
    expect(row.kind).toBe('template');
    expect(row.instances).toBeGreaterThanOrEqual(1);
    // max_agents counts the whole team: the lead and five spawned at most.
    expect(row.worst_usd / lead.worst_usd).toBeGreaterThanOrEqual(5);
    expect(row.worst_usd / lead.worst_usd).toBeLessThanOrEqual(6);
  });

  it("a shared context is read from the prompt cache: its tokens are each row's cached tokens; calls are summed per row", async () => {
    const plain = await estimate(PAIR());
    const shared = await estimate(PAIR().replace('agents:', `context: "${'The diff under review. '.repeat(400)}"\nagents:`));
    expect(plain.agents.every((a) => a.cached_tokens === 0)).toBe(true);
    // The context, 9,200 characters, is about 2,300 tokens; with each agent's tools it is what every call reads from the cache.
    for (const a of shared.agents) {
      expect(a.cached_tokens / a.calls, a.name).toBeGreaterThan(2_000);
      expect(a.cached_tokens / a.calls, a.name).toBeLessThan(4_000);
    }
    expect(shared.agents.every((a) => a.calls >= 1)).toBe(true);
  });

  it('a for_each wider than the counted sample is scaled from it: ten items cost ten times one, counted exact', async () => {
    const wide = (n: number) => `
name: wide
limits: { budget_usd: 100000, max_turns_per_agent: 1 }
setup:
  - id: files
    run: "seq 1 ${n}"
agents:
  lead: { role: manager }
  reviewer: { role: worker, for_each: "$<< lines(setup.files) >>", system: "Review file $<< item >> of the change, every line of it." }
kickoff: "@lead go."
`;
    const one = (await estimate(wide(1), { counted: true })).agents.find((a) => a.name === 'reviewer')!;
    const ten = (await estimate(wide(10), { counted: true })).agents.find((a) => a.name === 'reviewer')!;
    expect(ten).toMatchObject({ instances: 10, counted: 'exact' });
    expect(ten.likely_usd / one.likely_usd).toBeGreaterThan(9);
    expect(ten.likely_usd / one.likely_usd).toBeLessThan(11);
    expect(ten.calls).toBe(10 * one.calls);
  });

  it("the first request holds the agent's first message: a longer kickoff costs the lead more", async () => {
    const short = await estimate(PAIR('limits: { budget_usd: 1000 }'));
    const long = await estimate(
      PAIR('limits: { budget_usd: 1000 }').replace('"@helper look at it."', `"@helper look at it. ${'More to read. '.repeat(2000)}"`),
    );
    const lead = (e: Estimate) => e.agents.find((a) => a.name === 'lead')!;
    expect(lead(long).likely_usd).toBeGreaterThan(lead(short).likely_usd * 2);
  });

  it('max_tokens_total bounds the worst case at the dearest price one token has', async () => {
    const e = await estimate(PAIR('limits: { budget_usd: 1000, max_tokens_total: 1000 }'));
    const price = priceOf(modelInfo('claude-sonnet-5-5').known ? 'claude-sonnet-5-5' : 'claude-sonnet-4-5').price;
    const dearest = Math.max(worstCaseCost(1, 0, price), worstCaseCost(10_000_000, 0, price) / 10_000_000, worstCaseCost(0, 1, price));
    expect(e.worst_usd).toBeCloseTo(1000 * dearest, 9);
  });

  it('with an earlier session (--from), an agent that took turns there is estimated from them', async () => {
    // The session the CLI parked for people (its workflow is "verdict": a lead and a reviewer; the lead took one turn).
    const session = fileURLToPath(new URL('../fixtures/sessions/parked-for-people.jsonl', import.meta.url));
    const e = await estimate('name: verdict\nagents:\n  lead: { role: manager }\n  reviewer: { role: worker }\nkickoff: Decide.\n', { from: [session] });
    expect(e.sessions).toBe(1);
    expect(e.agents.find((a) => a.name === 'lead')!.turns_from).toBe('sessions');
  });
});
