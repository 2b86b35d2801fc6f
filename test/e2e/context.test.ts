import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastToolResult, lastUserText, startFakeAnthropic } from '../fake-anthropic/server.js';
import { isSummaryRequest, pingPongScript, pingPongWorkflow } from '../fixtures/ping-pong.js';
import { BIN, conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';
import { readEvents } from '../helpers/session.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('long conversations stay inside the context window', () => {
  it('2,000-character ping-pong runs its 400 team turns to max_turns, compacting on the way', async () => {
    // The server refuses what the model's window (200,000 tokens) would not hold.
    const server = await startFakeAnthropic(pingPongScript(2000), { maxPromptTokens: 200_000 });
    try {
      const started = Date.now();
      const run = await runWorkflow(server, pingPongWorkflow({ maxTurns: 400 }));
      expect(run.code, run.json.reason + run.stderr.slice(-2000)).toBe(3);
      expect(run.json.reason).toMatch(/^limit reached: max_turns/);
      expect(server.requests.filter((r) => r.bytes / 4 > 200_000), 'no request is refused as too long').toEqual([]);
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
      expect(server.requests, server.requests.map((r) => `${r.body.messages.length} ${lastUserText(r).slice(0, 80)}`).join("\n")).toHaveLength(14);
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
    const child = spawn(process.execPath, [BIN, 'run', 'workflow.yml', '--quiet'], { cwd: dir, env: { ...process.env, ...env }, stdio: 'ignore' });
    const closed = new Promise((resolve) => child.on('close', resolve));
    const sessions = join(dir, '.conclave', 'sessions');
    const name = () => (existsSync(sessions) ? readdirSync(sessions).find((f) => f.endsWith('.jsonl')) : undefined);
    const file = () => join(sessions, name()!);
    const compacted = () => name() !== undefined && readFileSync(file(), 'utf8').split('\n').filter((l) => l.includes('"context_compacted"')).length >= 2;
    while (!compacted() && child.exitCode === null) await sleep(2);
    child.kill('SIGKILL');
    await closed;
    try {
      const before = readEvents(file());
      expect(before.some((e) => e.type === 'run_ended'), 'killed before the end').toBe(false);
      const paid = new Set(before.filter((e) => e.type === 'model_call').map((e) => (e.response as { id: string }).id));
      const sentBefore = server.requests.length;
      const resumed = await conclave(['resume', file(), '--json'], { cwd: dir, env });
      expect(resumed.code, resumed.stderr).toBe(3);
      expect(JSON.parse(resumed.stdout).outputs).toEqual(baseline.json.outputs);
      // Every request after the kill asks for something the session did not hold.
      const keyOf = (r: (typeof server.requests)[number]) => JSON.stringify([r.agent, r.body.messages]);
      const answered = new Set(server.requests.slice(0, sentBefore).filter((r) => r.responseId && paid.has(r.responseId)).map(keyOf));
      for (const r of server.requests.slice(sentBefore)) expect(answered.has(keyOf(r))).toBe(false);

      const replay = await conclave(['run', 'workflow.yml', '--replay', file(), '--json'], { cwd: dir, env: { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: 'http://127.0.0.1:1' } });
      expect(replay.code, replay.stderr).toBe(3);
      expect(JSON.parse(replay.stdout).outputs).toEqual(baseline.json.outputs);
    } finally {
      await server.close();
    }
  }, 60_000);
});
