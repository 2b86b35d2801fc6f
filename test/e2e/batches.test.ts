import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { REVIEW, reviewScript } from '../fixtures/review-team.js';
import { BIN, conclave } from '../helpers/cli.js';
import { fromJson } from '../helpers/otlp-receiver.js';
import { runUntilKilled, runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('batch: true', () => {
  it('a lead and 8 reviewers: 10 calls in 3 batches (the 8 together), no ordinary call, at most 55 % of the same run unbatched', async () => {
    server = await startFakeAnthropic(reviewScript(8));
    const plain = await runWorkflow(server, REVIEW(false));
    expect(plain.code, plain.stderr).toBe(0);
    await server.close();
    server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 500 } });
    const batched = await runWorkflow(server, REVIEW(true));
    expect(batched.code, batched.stderr).toBe(0);
    expect(server.batches.map((b) => b.requests.length)).toEqual([1, 8, 1]);
    expect(server.requests).toHaveLength(10);
    expect(server.requests.every((r) => r.batch !== undefined)).toBe(true);
    const calls = batched.events.filter((e) => e.type === 'model_call');
    expect(calls.map((e) => e.batch)).toEqual(server.requests.map((r) => r.batch));
    // Each batch was noted before its answers: its custom ids are the requests' hashes.
    const notes = batched.events.filter((e) => e.type === 'batch_submitted');
    expect(notes.map((n) => n.batch_id)).toEqual(server.batches.map((b) => b.id));
    for (const call of calls) {
      const note = notes.find((n) => n.batch_id === call.batch)!;
      expect(note.seq).toBeLessThan(call.seq);
      expect(note.custom_ids).toContain(call.request_sha256);
    }
    // Traces tell which batch answered each call.
    const traced = await conclave(['trace', batched.json.session as unknown as string, '--format', 'json'], {
      cwd: batched.dir,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: '' },
    });
    const chats = fromJson(JSON.parse(traced.stdout)).filter((span) => span.name.startsWith('chat '));
    expect(chats.map((c) => c.attributes['conclave.batch']).sort()).toEqual(calls.map((e) => e.batch).sort());
    const cost = (run: typeof plain) => run.json.usage as unknown as { cost_usd: number };
    expect(cost(batched).cost_usd / cost(plain).cost_usd).toBeLessThanOrEqual(0.55);
  });

  it('a for_each of 8 with limits.concurrency 2: one batch of 8, for a call waiting for its batch holds no slot; resumed and replayed alike', async () => {
    server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 1_000 } });
    const narrow = REVIEW(true).replace('limits: { concurrency: 9 }', 'limits: { concurrency: 2 }');
    const run = await runWorkflow(server, narrow, ['--park']);
    expect(run.code, run.stderr).toBe(75);
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    let last = run.code;
    for (let i = 0; i < 10 && last === 75; i++) {
      await sleep(1_100);
      last = (await conclave(['resume', run.json.session as unknown as string, '--json'], { cwd: run.dir, env })).code;
    }
    expect(last).toBe(0);
    expect(server.batches.map((b) => b.requests.length)).toEqual([1, 8, 1]);
    const replay = await conclave(['run', 'workflow.yml', '--replay', run.json.session as unknown as string, '--json'], {
      cwd: run.dir,
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stderr).toBe(0);
  });

  it('kill -9 while the run waits for a batch, then resume: it polls the same batch, submits no call twice, and the session replays offline', async () => {
    server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 2_500 } });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-batch-'));
    writeFileSync(join(dir, 'workflow.yml'), REVIEW(true));
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    // Killed once the reviewers' batch is noted, while it is still being processed.
    const session = await runUntilKilled(server, dir, (text) => text.split('"batch_submitted"').length - 1 >= 2);
    const file = () => session;
    expect(server.batches.map((b) => b.requests.length)).toEqual([1, 8]);
    const resumed = await conclave(['resume', file(), '--json'], { cwd: dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(server.batches.map((b) => b.requests.length)).toEqual([1, 8, 1]);
    const ids = server.batches.flatMap((b) => b.requests.map((r) => r.custom_id));
    expect(new Set(ids).size).toBe(ids.length);
    expect(server.batches[1]!.retrieved).toBeGreaterThanOrEqual(2); // polled before the kill, and by the resume
    const replay = await conclave(['run', 'workflow.yml', '--replay', file(), '--json'], {
      cwd: dir,
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout).usage.cost_usd).toBe(JSON.parse(resumed.stdout).usage.cost_usd);
    expect(server.batches).toHaveLength(3);
  });

  it('with a cloud provider: refused before any call, by validate and by run (--provider too), saying why', async () => {
    server = await startFakeAnthropic({}, { batches: {} });
    const onBedrock = REVIEW(true).replace('defaults: {', 'provider: bedrock\ndefaults: {');
    const run = await runWorkflow(server, onBedrock);
    expect(run.code).toBe(2);
    expect(run.stderr + run.stdout).toContain("defaults sends its calls as a message batch (batch: true), but its provider is bedrock: only Anthropic's API");
    const checked = await conclave(['validate', 'workflow.yml'], { cwd: run.dir });
    expect(checked.code).toBe(2);
    expect(checked.stdout + checked.stderr).toMatch(/workflow\.yml:4:20: defaults sends its calls as a message batch/);
    const flagged = await runWorkflow(server, REVIEW(true), ['--provider', 'vertex']);
    expect(flagged.code).toBe(2);
    expect(flagged.stderr + flagged.stdout).toContain('--provider vertex sends them to a cloud');
    expect(server.requests).toHaveLength(0);
    expect(server.batches).toHaveLength(0);
  });

  it('--park: exit 75 in seconds, the session written and the lock released; a resume before the batch ends parks again, submitting nothing; resumes finish the run', async () => {
    server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 2_000 } });
    const started = Date.now();
    const parked = await runWorkflow(server, REVIEW(true), ['--park']);
    expect(parked.code, parked.stderr).toBe(75);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(parked.json).toMatchObject({ status: 'waiting', exit_code: 75 });
    expect(parked.json.reason).toContain(`parked: waiting for message batch ${server.batches[0]!.id}`);
    expect(server.batches).toHaveLength(1);
    const session = parked.json.session as unknown as string;
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const resume = () => conclave(['resume', session, '--json'], { cwd: parked.dir, env });
    // Before the batch ends: parked again at once, nothing submitted.
    const early = await resume();
    expect(early.code, early.stderr).toBe(75);
    expect(server.batches).toHaveLength(1);
    const codes: number[] = [];
    for (let i = 0; i < 10 && codes.at(-1) !== 0; i++) {
      await sleep(1_000);
      codes.push((await resume()).code);
    }
    expect(codes.at(-1)).toBe(0);
    expect(codes.every((c) => c === 0 || c === 75)).toBe(true);
    expect(server.batches.map((b) => b.requests.length)).toEqual([1, 8, 1]);
    const ids = server.batches.flatMap((b) => b.requests.map((r) => r.custom_id));
    expect(new Set(ids).size).toBe(ids.length);
    expect(server.requests.every((r) => r.batch !== undefined)).toBe(true);
  }, 60_000);

  it('--park without any batched agent says so once, and the run goes on as without it', async () => {
    server = await startFakeAnthropic(reviewScript(8));
    const run = await runWorkflow(server, REVIEW(false), ['--park']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      'conclave: warning: --park parks a run while its calls wait for a message batch or for people to vote, and no agent of this workflow has batch: true ' +
        'and it names no people',
    );
    await server.close();
    server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 60_000 } });
    const batched = await runWorkflow(server, REVIEW(true), ['--park']);
    expect(batched.code, batched.stderr).toBe(75);
    expect(batched.stderr).not.toContain('no agent of this workflow has batch: true');
  });

  it('--park in GitHub Actions: the job summary is headed as waiting (⏸️), not as failed', async () => {
    server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 60_000 } });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-batch-'));
    writeFileSync(join(dir, 'summary.md'), '');
    const parked = await runWorkflow(server, REVIEW(true), ['--park'], { dir, env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: join(dir, 'summary.md') } });
    expect(parked.code, parked.stderr).toBe(75);
    const summary = readFileSync(join(dir, 'summary.md'), 'utf8');
    expect(summary).toContain('## ⏸️ conclave: workflow.yml');
    expect(summary).toContain('**waiting** (exit 75)');
    expect(summary).not.toContain('❌');
  });

  it('an expired request is sent again once, in the next batch; an errored one twice fails the turn', async () => {
    const script = reviewScript(8);
    script['reviewer-3'] = [{ expired: true }, { text: 'Part 3: no problem found.' }];
    server = await startFakeAnthropic(script, { batches: { endsAfterMs: 300 } });
    const run = await runWorkflow(server, REVIEW(true));
    expect(run.code, run.stderr).toBe(0);
    expect(server.batches.map((b) => b.requests.length)).toEqual([1, 8, 1, 1]);
    // The same request, sent again: its custom id is the one batch 2 held.
    expect(server.batches[1]!.requests.map((r) => r.custom_id)).toContain(server.batches[2]!.requests[0]!.custom_id);
    await server.close();
    const failing = reviewScript(8);
    failing['reviewer-3'] = [
      { error: { status: 500, type: 'api_error', message: 'internal' } },
      { error: { status: 500, type: 'api_error', message: 'internal again' } },
    ];
    server = await startFakeAnthropic(failing, { batches: { endsAfterMs: 300 } });
    const failed = await runWorkflow(server, REVIEW(true));
    expect(failed.code).toBe(4);
    expect(failed.json.reason).toContain('@reviewer-3 failed: a batched call failed twice: api_error: internal again');
  });

  it('limits.wait_timeout: a batch not ended in time stops the run at that limit; SIGTERM while waiting cancels the batch', async () => {
    server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 60_000 } });
    const run = await runWorkflow(server, REVIEW(true).replace('limits: {', 'limits: { wait_timeout: 1s,'));
    expect(run.code, run.stderr).toBe(3);
    expect(run.json.reason).toMatch(/^limit reached: wait_timeout \(message batch msgbatch_0001 has not ended 1 s after it was submitted\)/);
    expect(server.batches[0]!.canceledAt).toBeUndefined(); // a resume once it has ended goes on
    await server.close();
    server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 60_000 } });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-batch-'));
    writeFileSync(join(dir, 'workflow.yml'), REVIEW(true));
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const child = spawn(process.execPath, [BIN, 'run', 'workflow.yml', '--quiet'], { cwd: dir, env: { ...process.env, ...env }, stdio: 'ignore' });
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    while (server.batches.length === 0 || server.batches[0]!.retrieved === 0) await sleep(10);
    child.kill('SIGTERM');
    expect(await closed).toBe(143);
    expect(server.batches[0]!.canceledAt).toBeDefined();
  });
});
