import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RELAY, relayScript } from '../fixtures/relay.js';
import { lastUserText, startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { BIN } from '../helpers/cli.js';
import { node24 } from '../helpers/node24.js';
import { channelOf, runWorkflow, TEST_API_KEY, type WorkflowRun } from '../helpers/run-workflow.js';

let server: FakeAnthropic;
afterEach(() => server?.close());

describe('the response cache', () => {
  it('answers a rerun from the cache: no request, no cost, the same channel', async () => {
    server = await startFakeAnthropic(relayScript());
    const dir = mkdtempSync(join(tmpdir(), 'conclave-cache-'));
    const first = await runWorkflow(server, RELAY, ['--response-cache', 'responses.sqlite'], { dir });
    expect(first.code, first.stderr).toBe(0);
    expect(server.requests).toHaveLength(3);
    expect((first.json.usage as { cost_usd: number }).cost_usd).toBeGreaterThan(0);
    const second = await runWorkflow(server, RELAY, ['--response-cache', 'responses.sqlite'], { dir });
    expect(second.code, second.stderr).toBe(0);
    expect(server.requests).toHaveLength(3);
    expect(second.json.outputs).toEqual(first.json.outputs);
    expect((second.json.usage as { cost_usd: number }).cost_usd).toBe(0);
    // The usage line counts no cached answer (they cost nothing), and says how many there were.
    expect(second.json.from_cache).toEqual({ answers: 3, tokens: expect.any(Number) });
    expect((second.json.from_cache as { tokens: number }).tokens).toBeGreaterThan(0);
    expect(first.json.from_cache).toEqual({ answers: 0, tokens: 0 });
    expect(channelOf(second)).toEqual(channelOf(first));
  });

  it('a fan-out whose answers race in another order is still answered whole from the cache', async () => {
    const workers = ['a', 'b', 'c', 'd', 'e', 'f'];
    const FAN = `
name: fan
limits: { concurrency: 8 }
agents:
  lead: { role: manager }
${workers.map((w) => `  ${w}: { role: worker }`).join('\n')}
kickoff: Split the work.
outputs:
  summary: $<< result.summary >>
`;
    const fresh = (latencyOf: (worker: number) => number) =>
      startFakeAnthropic({
        lead: [
          { text: workers.map((w) => `@${w} take part ${w}.`).join(' ') },
          (request) => ({
            tools: [
              {
                name: 'complete',
                input: {
                  status: 'success',
                  summary: lastUserText(request)
                    .match(/part \w done/g)!
                    .join(', '),
                },
              },
            ],
          }),
        ],
        ...Object.fromEntries(workers.map((w, i) => [w, () => ({ text: `part ${w} done`, delayMs: latencyOf(i) })])),
      });
    const arrival = (run: WorkflowRun) =>
      channelOf(run)
        .filter(([sender]) => workers.includes(sender))
        .map(([sender]) => sender)
        .join('');
    const fanIn = (run: WorkflowRun) => run.events.filter((e) => e.type === 'model_call' && e.agent === 'lead').map((e) => e.request_sha256);
    const dir = mkdtempSync(join(tmpdir(), 'conclave-cache-'));
    // Two paid runs into two caches, the answers arriving last-to-first, then first-to-last.
    // 150 ms apart: far enough that a loaded machine keeps the order.
    server = await fresh((i) => 150 * (workers.length - i));
    const backwards = await runWorkflow(server, FAN, ['--response-cache', 'one.sqlite'], { dir });
    await server.close();
    server = await fresh((i) => 150 * i);
    const forwards = await runWorkflow(server, FAN, ['--response-cache', 'two.sqlite'], { dir });
    expect(arrival(backwards)).toBe('fedcba');
    expect(arrival(forwards)).toBe('abcdef');
    expect(fanIn(forwards), 'the lead reads the fan-in the same way, whatever the arrival order').toEqual(fanIn(backwards));
    expect(forwards.json.outputs).toEqual({ summary: 'part a done, part b done, part c done, part d done, part e done, part f done' });
    // Reruns with random latencies: every call is a cache hit.
    for (let i = 0; i < 3; i++) {
      await server.close();
      server = await fresh(() => Math.floor(Math.random() * 200));
      const again = await runWorkflow(server, FAN, ['--response-cache', 'one.sqlite'], { dir });
      expect(again.code, again.stderr).toBe(0);
      expect(server.requests, 'every call of the rerun is a cache hit').toHaveLength(0);
      expect(again.json.outputs).toEqual(backwards.json.outputs);
    }
  });

  it('--response-cache-ttl: an entry older than its time to live is paid for again', async () => {
    server = await startFakeAnthropic(relayScript());
    const dir = mkdtempSync(join(tmpdir(), 'conclave-cache-'));
    // Within an hour the entries answer; a second after an entry of 1 s was written, it is gone. No
    // bound on how fast a run starts: on a loaded machine a run can take longer than a second.
    const hour = ['--response-cache', 'hour.sqlite', '--response-cache-ttl', '1h'];
    expect((await runWorkflow(server, RELAY, hour, { dir })).code).toBe(0);
    expect((await runWorkflow(server, RELAY, hour, { dir })).code).toBe(0);
    expect(server.requests, 'within its time to live, the entry answers').toHaveLength(3);
    await server.close();
    server = await startFakeAnthropic(relayScript());
    const second = ['--response-cache', 'second.sqlite', '--response-cache-ttl', '1s'];
    expect((await runWorkflow(server, RELAY, second, { dir })).code).toBe(0);
    expect(server.requests).toHaveLength(3);
    await new Promise((r) => setTimeout(r, 1_200));
    const third = await runWorkflow(server, RELAY, second, { dir });
    expect(third.code).toBe(0);
    expect(server.requests, 'after it, the call is made again').toHaveLength(4);
    expect(third.events.find((e) => e.type === 'model_call')).toMatchObject({ agent: 'lead' });
    expect(third.events.find((e) => e.type === 'model_call')).not.toHaveProperty('cached');
  });

  it('--offline runs from a filled cache with no API key, and fails on a miss', async () => {
    server = await startFakeAnthropic(relayScript());
    const dir = mkdtempSync(join(tmpdir(), 'conclave-cache-'));
    await runWorkflow(server, RELAY, ['--response-cache', 'filled.sqlite'], { dir });
    const offline = await runWorkflow(server, RELAY, ['--offline', '--response-cache', 'filled.sqlite'], { dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(offline.code, offline.stderr).toBe(0);
    expect(offline.json.outputs).toEqual({ answer: '4' });
    const miss = await runWorkflow(server, RELAY, ['--offline', '--response-cache', 'empty.sqlite'], { dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(miss.code, 'a miss under --offline is a refusal, as for a usage error').toBe(2);
    expect(miss.json.reason).toMatch(
      /^offline: the cache holds no response for @lead's turn 1, call 1 \(request [0-9a-f]{12}\); run without --offline to fill it$/,
    );
    expect(server.requests).toHaveLength(3);
  });

  it('says what is missing before writing anything, and finds an adapter installed in the project', async () => {
    server = await startFakeAnthropic({});
    const alone = await runWorkflow(server, RELAY, ['--offline']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toBe('conclave: --offline answers only from --response-cache or --replay: give one of them\n');
    const ttl = await runWorkflow(server, RELAY, ['--response-cache-ttl', '7d']);
    expect(ttl.stderr).toBe('conclave: --response-cache-ttl is for entries of --response-cache: give --response-cache too\n');
    const badTtl = await runWorkflow(server, RELAY, ['--response-cache', '--response-cache-ttl', 'soon']);
    expect(badTtl.stderr).toBe('conclave: --response-cache-ttl must be a duration of at least 1s, such as 12h or 7d; got "soon"\n');
    const scheme = await runWorkflow(server, RELAY, ['--response-cache', 'mongodb://user:pw@127.0.0.1/x']);
    expect(scheme.stderr).toBe('conclave: --response-cache takes a file, an sqlite://, redis:// or postgres:// URL; got mongodb://***@127.0.0.1/x\n');
    // The user's project has its own @keyv/redis (as the Action's docs install it): that one is used.
    const dir = mkdtempSync(join(tmpdir(), 'conclave-project-'));
    const shim = join(dir, 'node_modules', '@keyv', 'redis');
    mkdirSync(shim, { recursive: true });
    writeFileSync(join(shim, 'package.json'), JSON.stringify({ name: '@keyv/redis', version: '5.0.0', main: 'index.js' }));
    writeFileSync(
      join(shim, 'index.js'),
      `require('node:fs').writeFileSync(${JSON.stringify(join(dir, 'used'))}, 'yes');\nmodule.exports = class { constructor() { throw new Error('the project adapter was used'); } };\n`,
    );
    const project = await runWorkflow(server, RELAY, ['--response-cache', 'redis://user:pw@127.0.0.1:1/0'], { dir });
    expect(project.code).toBe(2);
    expect(project.stderr).toBe('conclave: cannot open the response cache: the project adapter was used\n');
    expect(readFileSync(join(dir, 'used'), 'utf8')).toBe('yes');
    expect(existsSync(join(project.dir, '.conclave', 'sessions'))).toBe(false);
  });
});

const on24 = node24();
if (!on24.node) process.stderr.write(`\n*** SKIPPING the Node 24 cache test: ${on24.why} ***\n\n`);

describe.skipIf(!on24.node)('the response cache on Node 24', () => {
  it("uses Node's own node:sqlite (no native module): the rerun is answered whole from the file, which @keyv/sqlite reads too", async () => {
    server = await startFakeAnthropic(relayScript());
    const dir = mkdtempSync(join(tmpdir(), 'conclave-cache-24-'));
    writeFileSync(join(dir, 'workflow.yml'), RELAY);
    const env = { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    // Asynchronously: the fake API answers from this process.
    const run = (node: string) =>
      new Promise<string>((done, fail) =>
        execFile(node, [BIN, 'run', 'workflow.yml', '--json', '--response-cache'], { cwd: dir, env }, (e, stdout, stderr) =>
          e ? fail(new Error(`${e.message}\n${stderr}`)) : done(stdout),
        ),
      );
    const first = JSON.parse(await run(on24.node!));
    expect(first.exit_code).toBe(0);
    expect(server.requests).toHaveLength(3);
    const second = JSON.parse(await run(on24.node!));
    expect(server.requests).toHaveLength(3);
    expect(second.from_cache.answers).toBe(3);
    expect(second.outputs).toEqual(first.outputs);
    // The same file, read by this Node (20: @keyv/sqlite): the same answers.
    const third = JSON.parse(await run(process.execPath));
    expect(server.requests).toHaveLength(3);
    expect(third.outputs).toEqual(first.outputs);
  });
});
