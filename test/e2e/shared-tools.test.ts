import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, startFakeAnthropic, type FakeAnthropic, type RecordedRequest } from '../fake-anthropic/server.js';
import { diffOf, reviewScript, SHARED } from '../fixtures/review-team.js';
import { conclave, ROOT } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

/**
 * The agents of a `context:` are sent the team's coordination tools as one list (docs/pricing.md:
 * one prefix for the whole team): the lead and the reviewers read one cached prefix, and an agent
 * that calls a tool of that list that is not its own is refused.
 */
let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const toolNames = (r: RecordedRequest) => (r.body.tools as { name: string }[]).map((t) => t.name);
const REVIEW3 = SHARED.replace(/for_each: \[[^\]]*\]/, 'for_each: [1, 2, 3]');

describe('one prefix for every agent of a context', () => {
  it('the lead and the reviewers are sent the same tools, so the context is written once, by the lead, and read by every reviewer', async () => {
    server = await startFakeAnthropic(reviewScript(3), { promptCache: { minTokens: 1024 } });
    const run = await runWorkflow(server, REVIEW3, [], { files: { 'change.diff': diffOf(4_000) } });
    expect(run.code, run.stderr).toBe(0);
    const [lead, ...rest] = server.requests;
    expect(lead!.agent).toBe('lead');
    for (const r of rest) expect(JSON.stringify(r.body.tools)).toBe(JSON.stringify(lead!.body.tools));
    expect(toolNames(lead!)).toEqual(['propose', 'vote', 'cancel_proposal', 'channel_history', 'complete']);
    const reviewers = rest.filter((r) => r.agent.startsWith('reviewer-'));
    expect(reviewers).toHaveLength(3);
    for (const r of reviewers) expect(r.cache!.read).toBeGreaterThan(4_000);
    expect(run.events.find((e) => e.type === 'run_started')).toMatchObject({ shared_tools: true });
    // Each agent is still told its own tools.
    const system = (r: RecordedRequest) => (r.body.system as { text: string }[]).map((b) => b.text).join('\n');
    expect(system(reviewers[0]!)).not.toMatch(/\bcomplete\b.*\btool/);
    // The first call of each reviewer is compared with the answer that wrote the team's prefix: the lead's.
    for (const r of reviewers) expect((r.body as { diagnostics?: unknown }).diagnostics).toEqual({ previous_message_id: lead!.responseId });
    expect((run.json.usage as { cache_misses: unknown[] }).cache_misses).toEqual([]);
  });

  it('a reviewer that calls complete, which only the lead has, is refused and the run goes on', async () => {
    const script = reviewScript(3);
    script['reviewer-1'] = (request) =>
      JSON.stringify(request.body.messages).includes('cannot use')
        ? { text: 'Part 1: no problem found.' }
        : { tools: [{ name: 'complete', input: { status: 'success', summary: 'Done by a reviewer.' } }] };
    server = await startFakeAnthropic(script, { promptCache: { minTokens: 1024 } });
    const run = await runWorkflow(server, REVIEW3, [], { files: { 'change.diff': diffOf(4_000) } });
    expect(run.code, run.stderr).toBe(0);
    // Coordination tools are not recorded as tool calls: their results are in the next request.
    const [, again] = server.of('reviewer-1');
    const results = (again!.body.messages.at(-1)!.content as { type: string; content?: unknown; is_error?: boolean }[]).filter((b) => b.type === 'tool_result');
    expect(results).toEqual([
      expect.objectContaining({
        is_error: true,
        content: 'You cannot use "complete": it is another agent\'s tool. Your tools: propose, vote, cancel_proposal, channel_history.',
      }),
    ]);
    expect(run.json.summary).not.toBe('Done by a reviewer.');
    expect(run.events.filter((e) => e.type === 'run_ended')).toHaveLength(1);
  });
});

/**
 * Sessions recorded before the shared list (test/fixtures/sessions/context-before-shared-tools:
 * the review of REVIEW3 with a 3,000-token diff, recorded by conclave at 7868aaf against the fake
 * API, finished and stopped at --max-turns 2): their agents were sent their own tools, and a
 * replay or a resume sends what they sent.
 */
describe('a session recorded before the shared list', () => {
  const FIXTURE = join(ROOT, 'test', 'fixtures', 'sessions', 'context-before-shared-tools');
  const copy = () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-old-context-'));
    cpSync(FIXTURE, dir, { recursive: true });
    return dir;
  };

  it('replays offline with the same cost', async () => {
    const dir = copy();
    const recorded = readFileSync(join(dir, 'finished.jsonl'), 'utf8');
    const shown = JSON.parse((await conclave(['show', 'finished.jsonl', '--format', 'json'], { cwd: dir })).stdout);
    const replay = await conclave(['run', 'workflow.yml', '--replay', 'finished.jsonl', '--json', '--session', 'again.jsonl'], {
      cwd: dir,
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout).usage.cost_usd).toBeCloseTo(shown.total.cost_usd, 6);
    expect(readFileSync(join(dir, 'again.jsonl'), 'utf8')).not.toContain('shared_tools');
    expect(recorded).not.toContain('shared_tools');
  });

  it('resumes: the recorded part kept byte for byte, and the later calls sent each agent its own tools as before', async () => {
    const dir = copy();
    const before = readFileSync(join(dir, 'stopped.jsonl'), 'utf8');
    server = await startFakeAnthropic(reviewScript(3), { promptCache: { minTokens: 1024 } });
    const resumed = await conclave(['resume', 'stopped.jsonl', '--max-turns', '20', '--json'], {
      cwd: dir,
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    const after = readFileSync(join(dir, 'stopped.jsonl'), 'utf8');
    expect(after.startsWith(before)).toBe(true);
    expect(after).not.toContain('shared_tools');
    expect(server.requests.length).toBeGreaterThan(0);
    for (const r of server.requests) {
      if (r.agent === 'lead') expect(toolNames(r)).toContain('complete');
      else expect(toolNames(r)).toEqual(['propose', 'vote', 'cancel_proposal', 'channel_history']);
    }
    writeFileSync(join(dir, 'resumed.jsonl'), after);
    // The replay of a resumed run is given the limits the run started with; the recording raises them where the resume did.
    const replay = await conclave(['run', 'workflow.yml', '--replay', 'resumed.jsonl', '--max-turns', '2', '--json', '--session', 'again.jsonl'], {
      cwd: dir,
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stderr).toBe(0);
  });
});
