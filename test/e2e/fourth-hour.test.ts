import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { OWN, REVIEW, reviewScript, SHARED } from '../fixtures/review-team.js';
import { BIN, conclave } from '../helpers/cli.js';
import { RELAY, relayScript } from '../fixtures/relay.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

/** What a new user met in the fourth hour (issue 51): parking, batches and the cache, said plainly. */
let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const REVIEW4 = REVIEW(true)
  .replace('[1, 2, 3, 4, 5, 6, 7, 8]', '[1, 2, 3, 4]')
  .replace('kickoff:', 'outputs:\n  verdict: $<< agents.lead.last_message >>\nkickoff:');
type Json = Record<string, unknown> & { batches?: { calls: number; saved_usd: number; waiting_calls?: number; reserved_usd?: number } };

async function resumeUntilDone(dir: string, session: string, env: NodeJS.ProcessEnv, extra: string[] = []) {
  for (let i = 0; i < 10; i++) {
    await sleep(1_000);
    const resumed = await conclave(['resume', session, '--json', ...extra], { cwd: dir, env });
    if (resumed.code !== 75) return resumed;
  }
  throw new Error('the run never ended');
}

describe('parking, said plainly', () => {
  it('a parked run says how many calls wait and what they may cost; no half-made outputs, no thinking lines; at the end, what batches saved', async () => {
    server = await startFakeAnthropic(reviewScript(4), { batches: { endsAfterMs: 900 } });
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const parked = await runWorkflow(server, REVIEW4, ['--park']);
    expect(parked.code, parked.stderr).toBe(75);
    const json = parked.json as Json;
    expect(json.reason).toMatch(/^parked: waiting for message batch msgbatch_\d+ \(1 call, at most \$[\d.]+ at the batch price, held against the budget\)$/);
    expect(json.batches).toMatchObject({ calls: 0, saved_usd: 0, waiting_calls: 1 });
    expect(json.batches!.reserved_usd).toBeGreaterThan(0);
    const text = await conclave(['resume', json.session as unknown as string], { cwd: parked.dir, env });
    expect(text.code).toBe(75);
    expect(text.stdout).not.toMatch(/^output /m);
    expect(text.stdout).not.toMatch(/more than with no cache/);
    expect(text.stderr).not.toMatch(/thinking/);
    const done = await resumeUntilDone(parked.dir, json.session as unknown as string, env);
    expect(done.code, done.stderr).toBe(0);
    const end = JSON.parse(done.stdout) as Json;
    expect(end.batches).toMatchObject({ calls: 6 });
    const calls = readFileSync(join(parked.dir, json.session as unknown as string), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"type":"model_call"'))
      .map((l) => JSON.parse(l) as { cost_usd: number; batch?: string });
    // Half price: what it saved is what it cost.
    expect(end.batches!.saved_usd).toBeCloseTo(
      calls.filter((c) => c.batch).reduce((sum, c) => sum + c.cost_usd, 0),
      5,
    );
    const shown = await conclave(['show', json.session as unknown as string], { cwd: parked.dir });
    expect(shown.stdout).toMatch(
      /Message batches: 6 calls answered at half price, \$[\d.]+ saved against the same calls one by one; parked \d+ times, [\d.]+ s between its processes/,
    );
    // Each agent's line says how many of its calls a batch answered.
    expect(shown.stdout).toMatch(/^ {2}lead +2 turns +2 calls .* · 2 batched$/m);
    expect(shown.stdout).toMatch(/^ {2}total +\d+ turns +6 calls .* · 6 batched$/m);
  }, 60_000);

  it('show has the prompt cache columns when the cache was used', async () => {
    server = await startFakeAnthropic(reviewScript(4), { promptCache: { minTokens: 16 } });
    const run = await runWorkflow(
      server,
      REVIEW4.replace('batch: true', 'batch: false').replace('name: batched-review', 'name: r\ncontext: |\n  A context long enough for the fake cache.'),
    );
    expect(run.code, run.stderr).toBe(0);
    const shown = await conclave(['show', run.json.session as unknown as string], { cwd: run.dir });
    expect(shown.stdout).toMatch(/^ {2}total +\d+ turns +\d+ calls +\d+ in +\d+ cache read +\d+ cache written +\d+ out/m);
  });

  it('Ctrl-C while calls wait for a batch leaves it running, says so, and the resume takes its answers; SIGTERM cancels it and says so', async () => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      server = await startFakeAnthropic(reviewScript(4), { batches: { endsAfterMs: 2_500 } });
      const env = { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
      const first = await runWorkflow(server, 'name: x\n', ['--quiet']); // a directory to run in
      writeFileSync(join(first.dir, 'workflow.yml'), REVIEW4);
      const child = spawn(process.execPath, [BIN, 'run', 'workflow.yml', '--json', '--session', 's.jsonl'], { cwd: first.dir, env });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      for (let i = 0; i < 100 && server.batches.length === 0; i++) await sleep(50);
      await sleep(400); // the batch noted, its first poll made
      child.kill(signal);
      const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
      const result = JSON.parse(stdout) as Json;
      expect(code).toBe(signal === 'SIGINT' ? 130 : 143);
      if (signal === 'SIGINT') {
        expect(result.reason).toMatch(/^interrupted by SIGINT; message batch msgbatch_0001 left running: a resume takes its answers, paying nothing again$/);
        expect(server.batches[0]!.canceledAt).toBeUndefined();
        const resumed = await resumeUntilDone(first.dir, 's.jsonl', env);
        expect(resumed.code, resumed.stderr).toBe(0);
        expect(server.batches[0]!.retrieved).toBeGreaterThanOrEqual(2);
        expect(server.batches.filter((b) => b.requests.some((r) => r.params.system && JSON.stringify(r.params.system).includes('Gather'))).length).toBe(2);
      } else {
        expect(result.reason).toMatch(/^interrupted by SIGTERM; message batch msgbatch_0001 cancelled: a resume sends its calls again$/);
        for (let i = 0; i < 40 && server.batches[0]!.canceledAt === undefined; i++) await sleep(50);
        expect(server.batches[0]!.canceledAt).toBeDefined();
      }
      await server.close();
      server = undefined;
    }
  }, 60_000);

  it('--allow-changed-workflow on a parked run names each request it sends again, and the batch whose answer goes unused', async () => {
    server = await startFakeAnthropic(reviewScript(4), { batches: { endsAfterMs: 1_500 } });
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const parked = await runWorkflow(server, REVIEW4, ['--park']);
    expect(parked.code).toBe(75);
    const session = parked.json.session as unknown as string;
    await sleep(1_600);
    const lead = await conclave(['resume', session, '--json'], { cwd: parked.dir, env });
    expect(lead.code).toBe(75); // parked again, on the reviewers' batch
    expect(server.batches.map((b) => b.requests.length)).toEqual([1, 4]);
    writeFileSync(
      join(parked.dir, 'workflow.yml'),
      REVIEW4.replace('Review part $<< item >> of the change.', 'Review part $<< item >> of the change, briefly.'),
    );
    const changed = await conclave(['resume', session, '--allow-changed-workflow', '--park', '--json'], { cwd: parked.dir, env });
    expect(
      changed.stderr.match(/warning: @reviewer-\d's request is not one the run submitted before it stopped \(in message batch msgbatch_0002\)/g),
    ).toHaveLength(4);
    expect(changed.stderr).toMatch(
      /It goes in a new batch, at most \$[\d.]+; an answer of the earlier batch to a request that is not made again is paid and not used/,
    );
  }, 60_000);
});

describe('the response cache, by its name', () => {
  it('--response-cache is the flag; --cache still works and says it is the old name; both at once are refused', async () => {
    server = await startFakeAnthropic(relayScript());
    const old = await runWorkflow(server, RELAY, ['--cache', 'r.sqlite', '--cache-ttl', '7d']);
    expect(old.code, old.stderr).toBe(0);
    expect(old.stderr).toContain('conclave: --cache is now --response-cache; the old name still works');
    expect(old.stderr).toContain('conclave: --cache-ttl is now --response-cache-ttl; the old name still works');
    const both = await runWorkflow(server, RELAY, ['--cache', 'r.sqlite', '--response-cache', 'r.sqlite']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give --response-cache or its old name, not both');
    const help = await conclave(['run', '--help']);
    expect(help.stdout).toContain('--response-cache [store]');
    expect(help.stdout).not.toMatch(/^\s+--cache /m);
  });
});

describe('pointing to context:', () => {
  it('validate warns when a setup output is in the system prompts of several agents, and not when it is the context', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-own-'));
    writeFileSync(join(dir, 'own.yml'), OWN);
    writeFileSync(join(dir, 'shared.yml'), SHARED);
    writeFileSync(join(dir, 'pair.yml'), OWN.replace('for_each: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]', 'for_each: [1]'));
    const own = await conclave(['validate', 'own.yml', 'shared.yml', 'pair.yml'], { cwd: dir });
    expect(own.code).toBe(0);
    expect(own.stdout).toMatch(
      /^own\.yml:\d+:\d+: warning: \$<< setup\.diff >> is in the system prompt of reviewer × 16: each call pays for it in full, .*put it in context:/m,
    );
    expect(own.stdout.match(/warning/g)).toHaveLength(1);
  });
});

describe('messages that say the next step', () => {
  it('cache: 5m, batch on a cloud, validate --provider, --park --replay, a short context, a missing document file', async () => {
    server = await startFakeAnthropic(reviewScript(4), { batches: { endsAfterMs: 100 } });
    const dir = (await runWorkflow(server, REVIEW4)).dir;
    const write = (name: string, text: string) => writeFileSync(join(dir, name), text);
    write('ttl.yml', 'name: t\ncache: 5m\nagents:\n  lead: { role: manager }\nkickoff: go\n');
    const ttl = await conclave(['validate', 'ttl.yml'], { cwd: dir });
    expect(ttl.stdout).toContain('ttl.yml:2:8: cache must be a mapping; found the string "5m": write cache: { ttl: 5m }');
    const onCloud = await conclave(['validate', '--provider', 'bedrock', 'workflow.yml'], { cwd: dir });
    expect(onCloud.code).toBe(2);
    expect(onCloud.stdout).toMatch(
      /defaults sends its calls as a message batch \(batch: true\), but --provider bedrock: only Anthropic's API has the Message Batches API here; leave --provider out for this workflow, or batch: false/,
    );
    expect((await conclave(['validate', '--provider', 'anthropic', 'workflow.yml'], { cwd: dir })).code).toBe(0);
    const badProvider = await conclave(['validate', '--provider', 'azure', 'workflow.yml'], { cwd: dir });
    expect(badProvider.stderr).toContain('--provider must be one of anthropic, bedrock, vertex, foundry, not "azure"');
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const run = await conclave(['run', 'workflow.yml', '--provider', 'bedrock'], { cwd: dir, env });
    expect(run.stderr).toContain('leave --provider out for this workflow, or set batch: false for it');
    const sessions = (await conclave(['run', 'workflow.yml', '--json', '--session', 'one.jsonl'], { cwd: dir, env })).code;
    expect(sessions).toBe(0);
    const replay = await conclave(['run', 'workflow.yml', '--park', '--replay', 'one.jsonl'], { cwd: dir, env });
    expect(replay.stderr).toContain('--park does nothing with --replay');
    write('short.yml', REVIEW4.replace('name: batched-review', 'name: s\ncontext: The change is small.'));
    const short = await conclave(['run', 'short.yml', '--quiet'], { cwd: dir, env: { ...env } });
    expect(short.code, short.stderr).toBe(0);
    const verbose = await conclave(['run', 'short.yml'], { cwd: dir, env });
    expect(verbose.stderr).toMatch(
      /warning: context: is about \d+ tokens: with the tools before it, under the 2,048 the prompt cache keeps for claude-sonnet-5-5/,
    );
    write('doc.yml', 'name: d\ndocuments:\n  plan: { owner: lead, file: PLAN.md }\nagents:\n  lead: { role: manager }\nkickoff: go\n');
    const doc = await conclave(['validate', 'doc.yml'], { cwd: dir });
    expect(doc.code).toBe(0);
    expect(doc.stdout).toContain('doc.yml:3:30: warning: documents.plan.file "PLAN.md" does not exist in the current directory');
    write('PLAN.md', '1. Freeze\n');
    expect((await conclave(['validate', 'doc.yml'], { cwd: dir })).stdout).not.toContain('warning');
  }, 60_000);
});
