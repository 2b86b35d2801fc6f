import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, startFakeAnthropic, type FakeAnthropic, type RecordedRequest, type Reply } from '../fake-anthropic/server.js';
import { fresh } from '../helpers/attack.js';
import { ALICE_PLAN, PLAN_TEAM, threeEdits, withLine } from '../fixtures/plan-team.js';
import { REVIEW, reviewScript } from '../fixtures/review-team.js';
import { BIN, conclave, NODE } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY, type WorkflowRun } from '../helpers/run-workflow.js';
import { sandboxForTests } from '../helpers/sandbox.js';
import { SWAPPER } from '../helpers/swapper.js';

/**
 * The fifth round of attacks (issue 50): the fourth stage's parts (documents, batches, parking)
 * against a hostile model, a hostile API and a cancelled job.
 */

let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const env = () => ({ ANTHROPIC_BASE_URL: server!.url, ANTHROPIC_API_KEY: TEST_API_KEY });

/** The tool results of every request of an agent, in order. */
function toolResults(requests: RecordedRequest[]): { content: string; is_error?: boolean }[] {
  return requests.flatMap((r) => {
    const last = r.body.messages.at(-1)?.content;
    return Array.isArray(last) ? (last.filter((b) => b.type === 'tool_result') as { content: string; is_error?: boolean }[]) : [];
  });
}

describe('a directory swapped for a link under write_file', () => {
  it.skipIf(!sandboxForTests().bwrap)(
    '1,000 writes raced against a sandboxed renameat2 loop: nothing written under .git, nothing outside touched or deleted',
    async () => {
      const repo = fresh('swap-race');
      const outside = fresh('swap-outside');
      mkdirSync(join(repo, '.git'));
      const gitConfig = '[core]\n\trepositoryformatversion = 0\n';
      writeFileSync(join(repo, '.git', 'config'), gitConfig);
      mkdirSync(join(repo, 'out'));
      mkdirSync(join(repo, 'out2'));
      symlinkSync('.git', join(repo, 'lnk'));
      symlinkSync(outside, join(repo, 'lnk2'));
      const WRITES = 1000;
      for (let i = 0; i < WRITES / 2; i++) writeFileSync(join(outside, `v${i}.txt`), `keep ${i}\n`);
      writeFileSync(join(repo, 'swap.py'), SWAPPER);
      writeFileSync(
        join(repo, 'workflow.yml'),
        `name: swap-race
sandbox: required
agents:
  lead: { role: manager, tools: [run_command] }
  writer: { role: worker, tools: [write_file] }
kickoff: "@lead @writer go"
`,
      );
      // Half the writes aim at .git/config through out/, half at files outside through out2/;
      // four answers of 250 parallel calls, then \`done\` stops the swapper.
      const calls = Array.from({ length: WRITES }, (_, i) =>
        i % 2 === 0
          ? { name: 'write_file', input: { path: 'out/config', content: '[core]\n\tfsmonitor = "touch /tmp/pwned"\n' } }
          : { name: 'write_file', input: { path: `out2/v${(i - 1) / 2}.txt`, content: 'overwritten\n' } },
      );
      server = await startFakeAnthropic({
        lead: (r) =>
          r.call === 1 ? { tools: [{ name: 'run_command', input: { command: '/usr/bin/python3 swap.py', timeout_seconds: 120 } }] } : { text: 'ok' },
        writer: [
          { delayMs: 1500, tools: calls.slice(0, 250) },
          { tools: calls.slice(250, 500) },
          { tools: calls.slice(500, 750) },
          { tools: calls.slice(750) },
          { tools: [{ name: 'write_file', input: { path: 'done', content: '' } }] },
          { text: 'written' },
        ],
      });
      const run = await conclave(['run', 'workflow.yml', '--json'], { cwd: repo, env: env() });
      expect(run.code, run.stderr).toBe(0);

      // 0 writes under .git, 0 files outside touched or deleted.
      expect(readdirSync(join(repo, '.git'))).toEqual(['config']);
      expect(readFileSync(join(repo, '.git', 'config'), 'utf8')).toBe(gitConfig);
      expect(readdirSync(outside).length).toBe(WRITES / 2);
      for (let i = 0; i < WRITES / 2; i++) expect(readFileSync(join(outside, `v${i}.txt`), 'utf8')).toBe(`keep ${i}\n`);

      const results = toolResults(server.of('writer')).slice(0, WRITES);
      expect(results).toHaveLength(WRITES);
      const refused = results.filter((r) => r.is_error);
      // The race was on: the swapper swapped, and some writes met a link and were refused.
      const swapped = toolResults(server.of('lead'))[0]!.content;
      expect(Number(/swaps (\d+)/.exec(swapped)?.[1])).toBeGreaterThan(100);
      expect(refused.length).toBeGreaterThan(0);
      for (const r of refused) expect(r.content).toMatch(/symbolic link|not a directory|no such file/);
    },
    180_000,
  );
});

describe('texts made of backticks', () => {
  it('a conflict between three documents of 50,000 backtick runs each is shown, and the run goes on (no stack overflow)', async () => {
    const ticks = (c: string) => `\`${c}`.repeat(50_000);
    let reviewed = false;
    server = await startFakeAnthropic({
      lead: (r) => {
        if (r.call === 1) return { tools: [{ name: 'edit_document', input: { name: 'plan', version: 1, text: ticks('b'), why: 'mine' } }] };
        if (!reviewed && lastUserText(r).includes('plan#1')) {
          reviewed = true;
          return { tools: [{ name: 'review_edit', input: { edit: 'plan#1', accept: true, why: 'ok' } }] };
        }
        return reviewed ? { tools: [{ name: 'complete', input: { status: 'success', summary: 'done' } }] } : { text: 'edited' };
      },
      alice: [
        { delayMs: 1000, tools: [{ name: 'edit_document', input: { name: 'plan', version: 1, text: ticks('c'), why: 'theirs' } }] },
        { text: 'proposed' },
        { text: 'seen' },
      ],
    });
    const run = await runWorkflow(
      server,
      `name: ticks
documents:
  plan: { owner: lead, file: plan.md }
agents:
  lead: { role: manager }
  alice: { role: worker }
kickoff: "@lead @alice go"
`,
      [],
      { files: { 'plan.md': ticks('a') }, env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: '' } },
    );
    expect(run.stderr).not.toMatch(/RangeError|Maximum call stack|\n\s+at /);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.status).toBe('success');
    // The owner's review answers with the conflict; the edit is closed as one.
    const reviewedWith = server.of('lead').map(lastUserText).join('\n');
    expect(reviewedWith).toContain('"status": "conflict"');
    expect(run.events.filter((e) => e.type === 'edit_closed').map((e) => e.status)).toEqual(['conflict']);
    const session = join(run.dir, run.json.session as unknown as string);
    for (const format of ['text', 'markdown', 'json']) {
      const shown = await conclave(['show', session, '--format', format], { cwd: run.dir });
      expect(shown.code, `${format}: ${shown.stderr}`).toBe(0);
    }
  }, 60_000);

  it('a kickoff of 160,000 backtick runs: the job summary is written and conclave exits as the run ended; show --format markdown reads it', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'read it' }] });
    const dir = fresh('ticks-summary');
    writeFileSync(join(dir, 'summary.md'), '');
    const run = await runWorkflow(
      server,
      `name: ticks
setup:
  - id: ticks
    run: cat ticks.txt
agents:
  lead: { role: manager }
kickoff: "$<< setup.ticks >>"
`,
      [],
      { dir, files: { 'ticks.txt': '`x'.repeat(160_000) }, env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: join(dir, 'summary.md') } },
    );
    expect(run.stderr).not.toMatch(/RangeError|Maximum call stack|\n\s+at /);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.status).toBe('idle');
    const summary = readFileSync(join(dir, 'summary.md'), 'utf8');
    expect(summary).toContain('### Transcript');
    const shown = await conclave(['show', join(dir, run.json.session as unknown as string), '--format', 'markdown'], { cwd: dir });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('## Transcript');
  }, 60_000);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every reader of a session accepts it: show (three formats), trace, and --replay offline. */
async function expectReadable(run: WorkflowRun): Promise<void> {
  const session = join(run.dir, run.json.session as unknown as string);
  for (const format of ['text', 'markdown', 'json']) {
    const shown = await conclave(['show', session, '--format', format], { cwd: run.dir });
    expect(shown.code, `show --format ${format}: ${shown.stderr}`).toBe(0);
  }
  const traced = await conclave(['trace', session, '--format', 'json'], { cwd: run.dir, env: { OTEL_EXPORTER_OTLP_ENDPOINT: '' } });
  expect(traced.code, traced.stderr).toBe(0);
  const replay = await conclave(['run', 'workflow.yml', '--replay', session, '--json'], { cwd: run.dir, env: { ANTHROPIC_API_KEY: TEST_API_KEY } });
  expect(replay.stderr).not.toMatch(/must be a whole number|internal error|\n\s+at /);
  expect([0, 1, 3, 4], replay.stdout.slice(0, 300)).toContain(replay.code);
}

describe('usage figures from the API', () => {
  const ONE = 'name: usage\nagents:\n  lead: { role: manager }\nkickoff: Go.\n';

  it('input_tokens 1.5, -2000000 or 1e300: retried as a broken answer, then a provider failure (exit 4); nothing written that a reader refuses', async () => {
    // The three at once: each waits out the retries' backoff.
    await Promise.all(
      [1.5, -2_000_000, 1e300].map(async (figure) => {
        const fake = await startFakeAnthropic({ lead: () => ({ text: 'done', usage: { input_tokens: figure, output_tokens: 10 } }) });
        try {
          const run = await runWorkflow(fake, ONE);
          expect(run.code, run.stderr).toBe(4);
          expect(run.json.status).toBe('provider_error');
          expect(run.json.reason).toContain(`cannot use: its usage.input_tokens is ${JSON.stringify(figure)}, not a whole number of tokens`);
          // Retried as the API's errors are, then given up: never recorded, never counted.
          expect(fake.of('lead').length).toBeGreaterThan(1);
          expect(run.events.filter((e) => e.type === 'model_call')).toHaveLength(0);
          expect((run.json.usage as { cost_usd: number }).cost_usd).toBe(0);
          await expectReadable(run);
        } finally {
          await fake.close();
        }
      }),
    );
  }, 60_000);

  it('one bad answer, then a good one: the run goes on with the good one', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'bad', usage: { input_tokens: -5, output_tokens: 1 } }, { text: 'done' }] });
    const run = await runWorkflow(server, ONE);
    expect(run.code, run.stderr).toBe(0);
    expect(run.events.filter((e) => e.type === 'model_call').map((e) => (e.response as { content: { text: string }[] }).content[0]!.text)).toEqual(['done']);
  }, 30_000);
});

describe('hostile Message Batches answers', () => {
  it('results of message: null, a string, content that is a string, usage of -1, an error without error: sent again once; twice, exit 4 in one sentence; sessions readable', async () => {
    const shapes: unknown[] = [
      { type: 'succeeded', message: null },
      'hello',
      { type: 'succeeded', message: { content: 'hi' } },
      { type: 'succeeded', message: { content: [{ type: 'text', text: 'x' }], stop_reason: 'end_turn', usage: { input_tokens: -1 } } },
      { type: 'errored' },
    ];
    await Promise.all(
      shapes.map(async (result) => {
        const once = reviewScript(8);
        once['reviewer-3'] = [{ batchResult: result }, { text: 'Part 3: no problem found.' }];
        const fake = await startFakeAnthropic(once, { batches: { endsAfterMs: 200 } });
        try {
          const run = await runWorkflow(fake, REVIEW(true));
          expect(run.code, `${JSON.stringify(result)}: ${run.stderr}`).toBe(0);
          expect(fake.batches.map((b) => b.requests.length)).toEqual([1, 8, 1, 1]);
          await expectReadable(run);
        } finally {
          await fake.close();
        }
        const twice = reviewScript(8);
        twice['reviewer-3'] = [{ batchResult: result }, { batchResult: result }];
        const failing = await startFakeAnthropic(twice, { batches: { endsAfterMs: 200 } });
        try {
          const failed = await runWorkflow(failing, REVIEW(true));
          expect(failed.code, failed.stderr).toBe(4);
          expect(failed.json.reason).toContain('@reviewer-3 failed: a batched call failed twice: ');
          expect(failed.stderr).not.toMatch(/TypeError|internal error|\n\s+at /);
          expect(failed.events.filter((e) => e.type === 'model_call' && e.agent === 'reviewer-3')).toHaveLength(0);
          await expectReadable(failed);
        } finally {
          await failing.close();
        }
      }),
    );
  }, 90_000);

  it('a parked run whose batch is gone (404): resume submits its requests again once, and the run finishes', async () => {
    server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 1_500 } });
    const parked = await runWorkflow(server, REVIEW(true), ['--park']);
    expect(parked.code, parked.stderr).toBe(75);
    const gone = server.batches.splice(0).map((b) => b.id);
    const resume = () => conclave(['resume', parked.json.session as unknown as string, '--json'], { cwd: parked.dir, env: env() });
    const first = await resume();
    expect(first.stderr).not.toMatch(/NotFoundError|internal error|\n\s+at /);
    expect([0, 75]).toContain(first.code);
    // The gone batch's request, submitted again in a new batch.
    expect(server.batches.length).toBeGreaterThan(0);
    expect(server.batches.map((b) => b.id)).not.toContain(gone[0]);
    const codes = [first.code];
    for (let i = 0; i < 10 && codes.at(-1) !== 0; i++) {
      await sleep(1_000);
      codes.push((await resume()).code);
    }
    expect(codes.at(-1)).toBe(0);
  }, 60_000);

  it('a 529 from the batch API: a provider failure, exit 4, one sentence', async () => {
    server = await startFakeAnthropic(reviewScript(8), { batches: { failWith: { status: 529, type: 'overloaded_error' } } });
    const run = await runWorkflow(server, REVIEW(true));
    expect(run.code, run.stderr).toBe(4);
    expect(run.json.status).toBe('provider_error');
    expect(run.json.reason).toContain('529 overloaded_error');
    expect(run.stderr).not.toMatch(/internal error|\n\s+at /);
  }, 60_000);
});

/**
 * Starts `conclave ARGS` in `dir` and waits until its session file holds `count` lines with
 * `marker` (or it ended): the running child, its stdout so far, its end, and its session's path.
 */
async function startUntil(dir: string, args: string[], marker: string, extraEnv: NodeJS.ProcessEnv = {}, count = 1) {
  const child = spawn(NODE, [BIN, ...args], { cwd: dir, env: { ...process.env, ...env(), ...extraEnv } });
  const out = { stdout: '' };
  child.stdout.on('data', (c) => (out.stdout += c));
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  const sessions = join(dir, '.conclave', 'sessions');
  const session = () => (existsSync(sessions) ? readdirSync(sessions).find((f) => f.endsWith('.jsonl')) : undefined);
  const seen = () => (session() ? readFileSync(join(sessions, session()!), 'utf8').split(marker).length - 1 : 0);
  for (let i = 0; i < 3_000 && child.exitCode === null && seen() < count; i++) await sleep(10);
  return { child, out, closed, session: () => join(sessions, session()!) };
}

describe('a batch and a stopping run', () => {
  it('SIGTERM while a batch is being created: the creation is awaited, noted and cancelled; the resume is not billed twice', async () => {
    server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 60_000, createDelayMs: 2_500 } });
    const dir = fresh('batch-upload');
    writeFileSync(join(dir, 'workflow.yml'), REVIEW(true));
    const { child, out, closed, session } = await startUntil(dir, ['run', 'workflow.yml', '--json'], '"batch_creating"');
    expect(server.batches).toHaveLength(0);
    child.kill('SIGTERM');
    const code = await closed;
    expect(code).toBe(143);
    // The batch was created after the signal: noted in the session, and cancelled.
    expect(server.batches).toHaveLength(1);
    expect(server.batches[0]!.canceledAt).toBeDefined();
    const text = readFileSync(session(), 'utf8');
    expect(text).toContain(`"batch_submitted","batch_id":"${server.batches[0]!.id}"`);
    expect(JSON.parse(out.stdout).status).toBe('interrupted');
  }, 60_000);

  it('SIGTERM while a batch is being created that ends at once: its cancel comes too late, and the resume takes its answers (no new batch)', async () => {
    server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 0, createDelayMs: 2_500 } });
    const dir = fresh('batch-upload-ended');
    writeFileSync(join(dir, 'workflow.yml'), REVIEW(true));
    const { child, closed, session } = await startUntil(dir, ['run', 'workflow.yml', '--json'], '"batch_creating"');
    child.kill('SIGTERM');
    expect(await closed).toBe(143);
    expect(server.batches).toHaveLength(1);
    const first = server.batches[0]!;
    const resumed = await conclave(['resume', session(), '--json'], { cwd: dir, env: env() });
    expect(resumed.stderr).not.toMatch(/internal error|\n\s+at /);
    // The first batch's requests were answered by it: none of them is in a later batch.
    const later = server.batches.slice(1).flatMap((b) => b.requests.map((r) => r.custom_id));
    for (const r of first.requests) expect(later).not.toContain(r.custom_id);
    expect(resumed.code, resumed.stderr).toBe(0);
  }, 60_000);

  it('SIGTERM while a batch takes longer to create than a stopping run waits: the resume finds the batch the API made, and takes its answers', async () => {
    const batches = { endsAfterMs: 0, createDelayMs: 16_000 };
    server = await startFakeAnthropic(reviewScript(8), { batches });
    const dir = fresh('batch-upload-unnamed');
    writeFileSync(join(dir, 'workflow.yml'), REVIEW(true));
    const { child, closed, session } = await startUntil(dir, ['run', 'workflow.yml', '--json'], '"batch_creating"');
    child.kill('SIGTERM');
    expect(await closed).toBe(143);
    // The run stopped before the API answered: its session names no batch for those calls.
    expect(readFileSync(session(), 'utf8')).not.toContain('"batch_submitted"');
    for (let i = 0; i < 200 && server.batches.length === 0; i++) await sleep(100);
    expect(server.batches).toHaveLength(1);
    const made = server.batches[0]!;
    // Only that upload was slow.
    batches.createDelayMs = 0;
    const resumed = await conclave(['resume', session(), '--json'], { cwd: dir, env: env() });
    expect(resumed.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain("it is looked for among the API's newest batches");
    // Found and taken: none of its requests went again, and the session now names it.
    const later = server.batches.slice(1).flatMap((b) => b.requests.map((r) => r.custom_id));
    for (const r of made.requests) expect(later).not.toContain(r.custom_id);
    expect(readFileSync(session(), 'utf8')).toContain(`"batch_submitted","batch_id":"${made.id}"`);
  }, 90_000);

  it('queue: interrupt abandons a batched call whose batch goes on: its prompt is counted (at the batch price), not free', async () => {
    server = await startFakeAnthropic(
      {
        lead: (r) => (JSON.stringify(r.body.messages).includes('found the bug') ? { text: 'Interrupted: a found it.' } : { text: 'slow answer' }),
        a: [{ text: 'I found the bug', delayMs: 1_500 }],
        b: [{ text: 'b done' }],
      },
      { batches: { endsAfterMs: 4_000 } },
    );
    const run = await runWorkflow(
      server,
      `name: interrupt-batch
agents:
  lead: { role: manager, queue: interrupt, batch: true }
  a: { role: worker }
  b: { role: worker, batch: true }
kickoff: "@lead @a @b start"
`,
    );
    expect(run.code, run.stderr).toBe(0);
    const interrupted = run.events.filter((e) => e.type === 'call_interrupted');
    // a's message interrupts the lead's first call (and b's answer, when the batch ends, its next).
    expect(interrupted.length).toBeGreaterThan(0);
    expect(interrupted.every((e) => e.agent === 'lead' && Number(e.cost_usd) > 0)).toBe(true);
    // The first batch held the lead's and b's calls, and went on for b.
    expect(server.batches[0]!.requests).toHaveLength(2);
    expect(server.batches[0]!.canceledAt).toBeUndefined();
    const paid = run.events.filter((e) => e.type === 'model_call' || e.type === 'call_interrupted').reduce((sum, e) => sum + Number(e.cost_usd), 0);
    expect((run.json.usage as { cost_usd: number }).cost_usd).toBeCloseTo(paid, 5);
  }, 60_000);
});

describe('long document diffs', () => {
  it('24 edits of a 33,000-line document in one answer: each diff bounded by its work, SIGTERM answered within 3 s', async () => {
    // 99,000 characters: 33,000 lines of two.
    const code = (n: number) => (n % 1296).toString(36).padStart(2, '0');
    const plan = Array.from({ length: 33_000 }, (_, i) => code(i)).join('\n');
    // Every third line changed: far more edits than a diff shown to the owner may hold.
    const edited = (k: number) =>
      plan
        .split('\n')
        .map((line, i) => (i % 3 === k % 3 ? code(i * 7 + k) : line))
        .join('\n');
    const edits = Array.from({ length: 24 }, (_, k) => ({ name: 'edit_document', input: { name: 'plan', version: 1, text: edited(k), why: `edit ${k}` } }));
    server = await startFakeAnthropic({ lead: (r) => ({ text: 'waiting', delayMs: r.call === 1 ? 0 : 60_000 }), alice: [{ tools: edits }, { text: 'sent' }] });
    const dir = fresh('long-diffs');
    writeFileSync(join(dir, 'plan.md'), plan);
    writeFileSync(
      join(dir, 'workflow.yml'),
      'name: diffs\nlimits: { budget_usd: 1000 }\ndocuments:\n  plan: { owner: lead, file: plan.md }\nagents:\n  lead: { role: manager }\n  alice: { role: worker }\nkickoff: "@alice edit the plan"\n',
    );
    const { child, out, closed } = await startUntil(dir, ['run', 'workflow.yml', '--json'], '"edit_proposed"');
    const signalled = Date.now();
    child.kill('SIGTERM');
    expect(await closed).toBe(143);
    // A dozen diffs of 0.3 s each held the signal for seconds; now the next tool call lets it in.
    expect(Date.now() - signalled).toBeLessThan(3_000);
    expect(JSON.parse(out.stdout).status).toBe('interrupted');
  }, 60_000);
});

describe('what rounds two and three left', () => {
  it('a sequence of sequences 2,300 deep under agents.editor: validate says where, exit 2, no stack trace', async () => {
    const dir = fresh('deep-sequences');
    const levels = Array.from({ length: 2300 }, (_, i) => `${' '.repeat(4 + 2 * i)}- `).join('\n');
    writeFileSync(
      join(dir, 'deep.yml'),
      `name: deep\nkickoff: hi\nagents:\n  editor:\n    role: worker\n    tools:\n${levels}\n${' '.repeat(4 + 2 * 2300)}x\n`,
    );
    for (const args of [
      ['validate', 'deep.yml'],
      ['graph', 'deep.yml'],
    ]) {
      const r = await conclave(args, { cwd: dir });
      expect(r.stderr + r.stdout).not.toMatch(/RangeError|internal error|\n\s+at /);
      expect(r.code).toBe(2);
      expect(r.stdout + r.stderr).toMatch(/deep\.yml:\d+:\d+: the file nests too deeply to read/);
    }
  }, 60_000);

  it('20,000 chained spawns with usage on each: show (text, markdown, json) and trace print them, no stack overflow', async () => {
    const dir = fresh('spawn-chain');
    const header = {
      type: 'header',
      format: 1,
      run_id: 'r',
      conclave_version: '0.1.0',
      workflow: { path: 'w.yml', sha256: 'x' },
      inputs: {},
      session: 's.jsonl',
      started_at: '2026-11-25T00:00:00Z',
    };
    const events: Record<string, unknown>[] = [
      { type: 'run_started', workflow: 'w', limits: { timeoutMs: 1, maxTurns: 1, maxTurnsPerAgent: 1, budgetUsd: 1, maxTokensTotal: null, concurrency: 1 } },
    ];
    for (let i = 0; i < 20_000; i++) {
      const agent = `a${i + 1}`;
      events.push({ type: 'agent_spawned', agent, template: 't', role: 'manager', parent: i === 0 ? 'lead' : `a${i}`, depth: i + 1 });
      events.push({
        type: 'model_call',
        agent,
        turn: 1,
        step: 1,
        request: {},
        request_sha256: `h${i}`,
        response: { content: [{ type: 'text', text: 'x' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } },
        cost_usd: 0.0001,
      });
    }
    const file = join(dir, 's.jsonl');
    writeFileSync(file, `${[header, ...events.map((e, i) => ({ seq: i + 1, ...e }))].map((l) => JSON.stringify(l)).join('\n')}\n`);
    for (const format of ['text', 'markdown', 'json']) {
      const shown = await conclave(['show', '--format', format, file]);
      expect(shown.stderr).not.toMatch(/RangeError|internal error/);
      expect(shown.code, `${format}: ${shown.stderr.slice(0, 500)}`).toBe(0);
    }
    const traced = await conclave(['trace', '--format', 'json', file], { env: { OTEL_EXPORTER_OTLP_ENDPOINT: '' } });
    expect(traced.stderr).not.toMatch(/RangeError|internal error/);
    expect(traced.code, traced.stderr.slice(0, 500)).toBe(0);
  }, 120_000);
});

describe('a resumed run writes back the real text of its documents, never the mask', () => {
  /**
   * Runs the plan team with `secret` as a secret-looking variable, kills it -9 once every edit is
   * closed (the lead's later turns are slow), and resumes it: the documents are rebuilt whole from
   * the recording, whose secrets are masked.
   */
  async function killedAndResumed(secret: string) {
    const script = threeEdits();
    const reviewing = script.lead as (r: RecordedRequest) => Reply;
    script.lead = (r) => {
      const reply = reviewing(r);
      return reply.tools ? reply : { text: '', delayMs: 2_500 };
    };
    server = await startFakeAnthropic(script);
    const dir = fresh('masked-documents');
    writeFileSync(join(dir, 'workflow.yml'), PLAN_TEAM());
    const withSecret = { ...env(), DB_PASSWORD: secret };
    const started = await startUntil(dir, ['run', 'workflow.yml', '--quiet'], '"edit_closed"', withSecret, 3);
    started.child.kill('SIGKILL');
    await started.closed;
    const session = started.session();
    const resumed = await conclave(['resume', session, '--json'], { cwd: dir, env: withSecret });
    return { dir, session, resumed, result: JSON.parse(resumed.stdout) as { output_errors: string[]; documents: Record<string, { version: number }> } };
  }

  it('a secret in lines nobody changed: the resumed run writes them as they are (the session keeps them masked)', async () => {
    const { dir, session, resumed, result } = await killedAndResumed('Switch reads');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(result.documents.plan!.version).toBe(3);
    expect(readFileSync(join(dir, 'out', 'PLAN.md'), 'utf8')).toBe(withLine(ALICE_PLAN, 4, '4. Drop the old table after a week'));
    expect(readFileSync(session, 'utf8')).not.toContain('Switch reads');
  }, 60_000);

  it("a secret in an agent's accepted change: not written (an output error says why), the file not overwritten with the mask", async () => {
    const { dir, resumed, result } = await killedAndResumed('old table');
    expect(resumed.code).toBe(1);
    expect(result.output_errors).toEqual([
      "documents.plan.write_to: not written to out/PLAN.md: an agent's change holds a secret the session masks, which cannot be restored (the session holds its text, masked)",
    ]);
    expect(existsSync(join(dir, 'out', 'PLAN.md'))).toBe(false);
  }, 60_000);
});
