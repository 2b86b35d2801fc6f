import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { FAN_OUT, fanOutScript, TEN_PER_FIVE_SECONDS } from '../fixtures/fan-out.js';
import { RELAY, relayScript } from '../fixtures/relay.js';
import { join } from 'node:path';
import { conclave } from '../helpers/cli.js';
import { runWorkflow } from '../helpers/run-workflow.js';
import { cloudEnv } from '../helpers/clouds.js';

let server: FakeAnthropic;
afterEach(() => server?.close());

describe('pacing under the API rate limits', () => {
  it('a 1+24 fan-out waits its turn under the limit the headers give instead of being refused', async () => {
    server = await startFakeAnthropic(fanOutScript(24), { rateLimits: TEN_PER_FIVE_SECONDS, latencyMs: 20 });
    const run = await runWorkflow(server, FAN_OUT(24));
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.status).toBe('idle');
    expect(server.requests.filter((r) => r.agent.startsWith('reviewer-'))).toHaveLength(24);
    expect(server.refusals).toBeLessThanOrEqual(1);
    // The waits show as they happen, and the session records each call that waited.
    expect(run.stderr).toMatch(/@reviewer-\d+ waiting for the rate limit on requests/);
    const waits = run.events.filter((e) => e.type === 'rate_waited');
    expect(waits.length).toBeGreaterThanOrEqual(10);
    expect(waits.every((e) => (e.waited_ms as number) > 0)).toBe(true);
    expect(waits.filter((e) => e.reason === 'requests').length).toBeGreaterThanOrEqual(10);
    const shown = await conclave(['show', join(run.dir, run.json.session as string)]);
    expect(shown.stdout).toMatch(new RegExp(`Rate limits: ${waits.length} calls waited \\d+\\.\\d s in all`));
  }, 60_000);

  it('a sliding window (12 in any 5 s, its reset the moment the oldest request leaves): the same fan-out waits for it, refused at most once', async () => {
    server = await startFakeAnthropic(fanOutScript(24), { rateLimits: { requests: { limit: 12, windowMs: 5_000 } }, rateLimiter: 'sliding', latencyMs: 200 });
    const started = Date.now();
    const run = await runWorkflow(server, FAN_OUT(24));
    expect(run.code, run.stderr).toBe(0);
    expect(server.requests.filter((r) => r.agent.startsWith('reviewer-'))).toHaveLength(24);
    // A bucket's reading of a window's reset took it as many times longer, and was refused as it went on.
    expect(server.refusals).toBeLessThanOrEqual(1);
    expect(Date.now() - started).toBeLessThan(45_000);
  }, 60_000);

  it.each([0, 20, 200])(
    'a sliding window of 10 in any 5 s (the limit in headers), answers after %i ms: lead + 24 refused at most once',
    async (latencyMs) => {
      server = await startFakeAnthropic(fanOutScript(24), { rateLimits: { requests: { limit: 10, windowMs: 5_000 } }, rateLimiter: 'sliding', latencyMs });
      const run = await runWorkflow(server, FAN_OUT(24));
      expect(run.code, run.stderr).toBe(0);
      expect(server.requests.filter((r) => r.agent.startsWith('reviewer-'))).toHaveLength(24);
      expect(server.refusals).toBeLessThanOrEqual(1);
    },
    60_000,
  );

  it('three runs on one API key with no store between them: each learns of the others from the words it reads, and no lead fails for refusals', async () => {
    // Each run is refused at times (it cannot see the others' calls). A bucket others use too is followed from when its
    // word was seen, as if they took what refilled meanwhile: followed from when its request went, a lead's call was
    // refused past its retries and the run failed (exit 4) in every try.
    server = await startFakeAnthropic(fanOutScript(14), { rateLimits: TEN_PER_FIVE_SECONDS, latencyMs: 1_000 });
    const runs = await Promise.all([1, 2, 3].map(() => runWorkflow(server, FAN_OUT(14))));
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    expect(server.requests.filter((r) => r.agent === 'lead').length).toBeGreaterThanOrEqual(6);
  }, 90_000);

  it('--rate-limit (or CONCLAVE_RATE_LIMIT) paces where the API sends no headers; a wait ends with the run at its timeout', async () => {
    server = await startFakeAnthropic(relayScript());
    const started = Date.now();
    const run = await runWorkflow(server, RELAY, ['--timeout', '3s'], { env: { CONCLAVE_RATE_LIMIT: 'rpm=2' } });
    expect(run.code, run.stderr).toBe(3);
    expect(run.json.reason).toMatch(/^limit reached: timeout/);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(server.requests, 'two requests in the minute, the third waiting').toHaveLength(2);
    expect(run.stderr).toMatch(/@lead waiting for the rate limit on requests/);
    const flag = await runWorkflow((server = await startFakeAnthropic(relayScript())), RELAY, ['--timeout', '3s', '--rate-limit', 'rpm=1'], {
      env: { CONCLAVE_RATE_LIMIT: 'rpm=50' },
    });
    expect(flag.code, flag.stderr).toBe(3);
    expect(server.requests, 'the flag wins over the environment').toHaveLength(1);
  }, 30_000);

  it.each(['bedrock', 'vertex', 'foundry'])(
    'paces the calls of a run on %s as on the API: each request of a call is known to the pacer',
    async (provider) => {
      server = await startFakeAnthropic(relayScript());
      const run = await runWorkflow(server, RELAY, ['--timeout', '3s', '--rate-limit', 'rpm=1', '--provider', provider], { env: cloudEnv(server) });
      expect(run.code, run.stderr).toBe(3);
      expect(
        server.requests.map((r) => r.wire),
        'one request in the minute, the next waiting',
      ).toEqual([provider]);
      expect(run.stderr).toMatch(/@\w+ waiting for the rate limit on requests/);
    },
    30_000,
  );

  it("the workflow's rate_limits: pace its model class; a paced session replays, its waits skipped", async () => {
    server = await startFakeAnthropic(relayScript());
    const run = await runWorkflow(server, RELAY.replace('agents:', 'rate_limits: { sonnet: { rpm: 2 }, opus: { rpm: 1000 } }\nagents:'), ['--timeout', '3s']);
    expect(run.code, run.stderr).toBe(3);
    expect(server.requests).toHaveLength(2);
    expect(run.stderr).toMatch(/waiting for the rate limit on requests/);
    await server.close();
    // A run whose calls waited replays: the rate_waited notes are skipped like the limits a resume changed.
    server = await startFakeAnthropic(fanOutScript(6), { rateLimits: { requests: { limit: 3, windowMs: 1_500 } } });
    const paced = await runWorkflow(server, FAN_OUT(6));
    expect(paced.code, paced.stderr).toBe(0);
    expect(paced.events.filter((e) => e.type === 'rate_waited').length).toBeGreaterThan(0);
    const replay = await conclave(['run', 'workflow.yml', '--replay', paced.json.session as string, '--json'], { cwd: paced.dir });
    expect(replay.code, replay.stdout.slice(0, 400)).toBe(0);
  }, 30_000);
});
