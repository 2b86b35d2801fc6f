import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { channelOf, runWorkflow } from '../helpers/run-workflow.js';

const RELAY = `
name: relay
agents:
  lead: { role: manager }
  helper: { role: worker }
kickoff: What is 2 + 2?
outputs:
  answer: $<< agents.helper.last_message >>
`;

let server: FakeAnthropic;
afterEach(() => server?.close());

const script = () => ({
  lead: (r: { call: number }) => ({ text: r.call === 1 ? '@helper what is 2 + 2?' : 'Thanks.' }),
  helper: () => ({ text: '4' }),
});

describe('the response cache', () => {
  it('answers a rerun from the cache: no request, no cost, the same channel', async () => {
    server = await startFakeAnthropic(script());
    const dir = mkdtempSync(join(tmpdir(), 'conclave-cache-'));
    const first = await runWorkflow(server, RELAY, ['--cache', 'responses.sqlite'], { dir });
    expect(first.code, first.stderr).toBe(0);
    expect(server.requests).toHaveLength(3);
    expect((first.json.usage as { cost_usd: number }).cost_usd).toBeGreaterThan(0);
    const second = await runWorkflow(server, RELAY, ['--cache', 'responses.sqlite'], { dir });
    expect(second.code, second.stderr).toBe(0);
    expect(server.requests).toHaveLength(3);
    expect(second.json.outputs).toEqual(first.json.outputs);
    expect((second.json.usage as { cost_usd: number }).cost_usd).toBe(0);
    expect(channelOf(second)).toEqual(channelOf(first));
  });

  it('--offline runs from a filled cache with no API key, and fails on a miss', async () => {
    server = await startFakeAnthropic(script());
    const dir = mkdtempSync(join(tmpdir(), 'conclave-cache-'));
    await runWorkflow(server, RELAY, ['--cache', 'filled.sqlite'], { dir });
    const offline = await runWorkflow(server, RELAY, ['--offline', '--cache', 'filled.sqlite'], { dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(offline.code, offline.stderr).toBe(0);
    expect(offline.json.outputs).toEqual({ answer: '4' });
    const miss = await runWorkflow(server, RELAY, ['--offline', '--cache', 'empty.sqlite'], { dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(miss.code, 'a miss under --offline is a refusal, as for a usage error').toBe(2);
    expect(miss.json.reason).toMatch(/^offline: the cache holds no response for @lead's turn 1, call 1 \(request [0-9a-f]{12}\); run without --offline to fill it$/);
    expect(server.requests).toHaveLength(3);
  });

  it('says what is missing, before writing anything, for --offline alone or an adapter that is not installed', async () => {
    server = await startFakeAnthropic({});
    const alone = await runWorkflow(server, RELAY, ['--offline']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toBe('conclave: --offline answers only from --cache or --replay: give one of them\n');
    const redis = await runWorkflow(server, RELAY, ['--cache', 'redis://user:pw@127.0.0.1:1/0']);
    expect(redis.code).toBe(2);
    expect(redis.stderr).toBe('conclave: --cache redis://***@127.0.0.1:1/0 needs the keyv adapter @keyv/redis: npm install @keyv/redis\n');
    expect(existsSync(join(redis.dir, '.conclave', 'sessions'))).toBe(false);
  });
});
