import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastToolResult, lastUserText, startFakeAnthropic } from '../fake-anthropic/server.js';
import { isSummaryRequest, pingPongScript, pingPongWorkflow } from '../fixtures/ping-pong.js';
import { conclave } from '../helpers/cli.js';
import { runUntilKilled, runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';
import { readEvents } from '../helpers/session.js';

describe('long conversations stay inside the context window', () => {
  it('2,000-character ping-pong runs its 400 team turns to max_turns, compacting on the way', async () => {
    // The server refuses what the model's window (200,000 tokens) would not hold.
    const server = await startFakeAnthropic(pingPongScript(2000), { maxPromptTokens: 200_000 });
    try {
      const started = Date.now();
      const run = await runWorkflow(server, pingPongWorkflow({ maxTurns: 400 }));
      expect(run.code, run.json.reason + run.stderr.slice(-2000)).toBe(3);
      expect(run.json.reason).toMatch(/^limit reached: max_turns/);
      expect(
        server.requests.filter((r) => r.bytes / 4 > 200_000),
        'no request is refused as too long',
      ).toEqual([]);
      const compactions = run.events.filter((e) => e.type === 'context_compacted');
      expect(compactions.map((c) => c.agent).sort()).toEqual(expect.arrayContaining(['a', 'b']));
      for (const c of compactions) {
        expect(c.reason).toBe('threshold');
        expect(c.tokens_before as number).toBeGreaterThan(150_000 - 2_000);
        expect(c.tokens_after as number).toBeLessThan(10_000);
        expect(c.summary).toMatch(/^Summary by @/);
      }
      expect(server.requests.filter(isSummaryRequest)).toHaveLength(compactions.length);
      expect(run.stderr).toContain('compacted its conversation: ');
      process.stderr.write(`ping-pong: ${server.requests.length} requests, ${compactions.length} compactions, ${Date.now() - started} ms\n`);
    } finally {
      await server.close();
    }
  }, 120_000);

  it('"prompt is too long" from an endpoint with a smaller window: compacts and retries, recorded for resume', async () => {
    // compact_at is the table's 150,000 tokens, but this endpoint takes 30,000.
    const server = await startFakeAnthropic(pingPongScript(2000), { maxPromptTokens: 30_000 });
    try {
      const run = await runWorkflow(server, pingPongWorkflow({ maxTurns: 60 }));
      expect(run.code, run.json.reason).toBe(3);
      const refused = run.events.filter((e) => e.type === 'context_exceeded');
      const compactions = run.events.filter((e) => e.type === 'context_compacted');
      expect(refused.length).toBeGreaterThanOrEqual(2);
      expect(compactions.filter((c) => c.reason === 'too_long')).toHaveLength(refused.length);
      expect(refused[0]!.error).toMatch(/^400 invalid_request_error prompt is too long: \d+ tokens > 30000 maximum$/);
      expect(run.stderr).toContain('compacted its conversation, after the API refused it as too long');
      // Each refusal is followed by a summary call that fits and a retry that succeeds.
      expect(server.requests.filter(isSummaryRequest).every((r) => r.bytes / 4 <= 30_000)).toBe(true);
      const replay = await conclave(['run', 'workflow.yml', '--replay', run.json.session as string, '--json'], { cwd: run.dir });
      expect(replay.code, replay.stderr).toBe(3);
      expect(JSON.parse(replay.stdout).outputs).toEqual(run.json.outputs);
      const shown = await conclave(['show', run.json.session as string], { cwd: run.dir });
      expect(shown.stdout).toMatch(
        /\nCompactions:\n {2}@[ab] turn \d+: \d+ → \d+ tokens \(earlier turns summarised; the API said the prompt was too long\)\n {4}Summary by @/,
      );
      const markdown = await conclave(['show', run.json.session as string, '--format', 'markdown'], { cwd: run.dir });
      expect(markdown.stdout).toContain('## Compactions\n\n| agent | turn | why | tokens | tool results cleared | summary |');
      expect(markdown.stdout).toMatch(/\| @[ab] \| \d+ \| the API said too long \| \d+ → \d+ \| 0 \| \d+ characters \|/);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('thirteen 1 MB files read in one turn: the turn completes within its tool output budget', async () => {
    const files = Object.fromEntries(Array.from({ length: 13 }, (_, i) => [`big${i}.txt`, `${`line ${i} of a very large file\n`.repeat(40_000)}`]));
    const server = await startFakeAnthropic(
      {
        lead: (r) => {
          const read = r.body.messages.filter((m) => Array.isArray(m.content) && m.content.some((b) => b.type === 'tool_result')).length;
          if (read < 13) return { tools: [{ name: 'read_file', input: { path: `big${read}.txt` } }] };
          return { tools: [{ name: 'complete', input: { status: 'success', summary: 'read them all' } }] };
        },
      },
      { maxPromptTokens: 200_000 },
    );
    try {
      const workflow = `name: reader\ndefaults: { model: claude-haiku-4-5 }\nagents:\n  lead: { role: manager, tools: [read_file] }\nkickoff: Read big0.txt to big12.txt.\n`;
      const run = await runWorkflow(server, workflow, [], { files });
      expect(run.code, run.json.reason).toBe(0);
      expect(server.requests, server.requests.map((r) => `${r.body.messages.length} ${lastUserText(r).slice(0, 80)}`).join('\n')).toHaveLength(14);
      expect(Math.max(...server.requests.map((r) => r.bytes / 4))).toBeLessThan(150_000);
      // Two files whole and a third cut fill the budget (a quarter of compact_at); the other ten are not read.
      expect(run.events.filter((e) => e.type === 'tool_result' && e.tool === 'read_file')).toHaveLength(3);
      expect(server.requests.filter((r) => lastUserText(r).startsWith('Not run: this turn')).length).toBe(10);
      const lastRead = lastUserText(server.requests.at(-1)!);
      expect(lastToolResult(server.requests.at(-1)!)).toBe('read_file');
      expect(lastRead).toMatch(/^Not run: this turn's tool output budget \(37500 tokens\) is spent/);
      const cut = server.requests.map(lastUserText).find((t) => t.includes('[cut here: this turn'));
      expect(cut).toBeDefined();
    } finally {
      await server.close();
    }
  }, 60_000);

  it('kill -9 after a compaction, then resume: the same outputs, no request sent again; --replay passes offline', async () => {
    const workflow = pingPongWorkflow({ maxTurns: 40, compactAt: 6_000 });
    const baselineServer = await startFakeAnthropic(pingPongScript(1500));
    const baseline = await runWorkflow(baselineServer, workflow);
    await baselineServer.close();
    expect(baseline.code).toBe(3);
    expect(baseline.events.filter((e) => e.type === 'context_compacted').length).toBeGreaterThanOrEqual(4);

    const server = await startFakeAnthropic(pingPongScript(1500), { latencyMs: 20 });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-compact-kill-'));
    writeFileSync(join(dir, 'workflow.yml'), workflow);
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const session = await runUntilKilled(server, dir, (text) => text.split('\n').filter((l) => l.includes('"context_compacted"')).length >= 2, 2);
    const file = () => session;
    try {
      const before = readEvents(file());
      expect(
        before.some((e) => e.type === 'run_ended'),
        'killed before the end',
      ).toBe(false);
      const paid = new Set(before.filter((e) => e.type === 'model_call').map((e) => (e.response as { id: string }).id));
      const sentBefore = server.requests.length;
      const resumed = await conclave(['resume', file(), '--json'], { cwd: dir, env });
      expect(resumed.code, resumed.stderr).toBe(3);
      expect(JSON.parse(resumed.stdout).outputs).toEqual(baseline.json.outputs);
      // Every request after the kill asks for something the session did not hold.
      const keyOf = (r: (typeof server.requests)[number]) => JSON.stringify([r.agent, r.body.messages]);
      const answered = new Set(
        server.requests
          .slice(0, sentBefore)
          .filter((r) => r.responseId && paid.has(r.responseId))
          .map(keyOf),
      );
      for (const r of server.requests.slice(sentBefore)) expect(answered.has(keyOf(r))).toBe(false);

      const replay = await conclave(['run', 'workflow.yml', '--replay', file(), '--json'], {
        cwd: dir,
        env: { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: 'http://127.0.0.1:1' },
      });
      expect(replay.code, replay.stderr).toBe(3);
      expect(JSON.parse(replay.stdout).outputs).toEqual(baseline.json.outputs);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('old tool results are cleared first, the newest kept; no summary when that is enough', async () => {
    const page = 'x'.repeat(40_000);
    const server = await startFakeAnthropic({
      lead: (r) => {
        const reads = r.body.messages.filter((m) => Array.isArray(m.content) && m.content.some((b) => b.type === 'tool_result')).length;
        const readThisTurn = lastToolResult(r) === 'read_file';
        if (reads >= 8 && readThisTurn) return { tools: [{ name: 'complete', input: { status: 'success', summary: 'read' } }] };
        return readThisTurn ? { text: `@helper page ${reads} read` } : { tools: [{ name: 'read_file', input: { path: 'page.txt' } }] };
      },
      helper: () => ({ text: 'ok' }),
    });
    try {
      const workflow = `name: pages\ndefaults: { compact_at: 40000 }\nagents:\n  lead: { role: manager, tools: [read_file] }\n  helper: { role: worker }\nkickoff: Read page.txt every turn.\n`;
      const run = await runWorkflow(server, workflow, [], { files: { 'page.txt': page } });
      expect(run.code, run.json.reason).toBe(0);
      const compactions = run.events.filter((e) => e.type === 'context_compacted');
      expect(compactions.length).toBeGreaterThanOrEqual(1);
      expect(compactions.every((c) => c.summary === null && (c.cleared as number) > 0)).toBe(true);
      expect(server.requests.filter(isSummaryRequest)).toHaveLength(0);
      const last = server.of('lead').at(-1)!;
      const results = last.body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content.filter((b) => b.type === 'tool_result') : []));
      const kept = results.filter((b) => b.content === page);
      expect(kept.length).toBeGreaterThanOrEqual(1);
      expect(kept.length).toBeLessThanOrEqual(3);
      expect(results.filter((b) => String(b.content).startsWith('[cleared to keep the conversation within its context window] (40000 characters')).length).toBe(
        results.length - kept.length,
      );
      expect(Math.max(...server.requests.map((r) => r.bytes / 4))).toBeLessThan(40_000 + 12_000);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('a large team: each preamble lists the neighbourhood, and team_roster the whole team', async () => {
    const workers = Array.from({ length: 40 }, (_, i) => `w${i + 1}`);
    const server = await startFakeAnthropic({
      lead: [{ text: '@all report.' }, { text: 'Thanks.' }],
      ...Object.fromEntries(
        workers.map((w) => [w, w === 'w7' ? [{ tools: [{ name: 'team_roster', input: { reports_to: 'lead' } }] }, { text: 'listed' }] : [{ text: 'ok' }]]),
      ),
    });
    try {
      const workflow = `name: wide\nlimits: { concurrency: 8 }\nagents:\n  lead: { role: manager }\n${workers.map((w) => `  ${w}: { role: worker, description: module ${w} }`).join('\n')}\nkickoff: Go.\n`;
      const run = await runWorkflow(server, workflow);
      expect(run.code, run.json.reason).toBe(0);
      const system = (r: (typeof server.requests)[number]) => (r.body.system as { text: string }[])[0]!.text;
      const worker = system(server.of('w3')[0]!);
      expect(worker).toContain('The team has 41 agents; those you work with most (team_roster lists them all):');
      expect(worker).toContain('- @w3 (you) — worker, reports to @lead: module w3');
      expect(worker).toContain('- and 39 others who report to @lead, as you do (team_roster with reports_to: "lead" lists them)');
      expect(worker).not.toContain('@w4');
      expect(system(server.of('lead')[0]!)).toContain('- @w40 — worker, reports to @lead: module w40');
      const listed = lastUserText(server.of('w7')[1]!);
      expect(listed.split('\n').filter((l) => l.startsWith('- @w'))).toHaveLength(40);
    } finally {
      await server.close();
    }
  });
});
