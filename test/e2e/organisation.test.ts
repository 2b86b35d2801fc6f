import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RELAY, relayScript } from '../fixtures/relay.js';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { conclave } from '../helpers/cli.js';
import { startFakeGitHub } from '../fake-github/server.js';
import { HEAD, PULL, pullRequestJob, REPOSITORY } from '../helpers/pull-request-job.js';
import { runWorkflow, TEST_API_KEY, type WorkflowRun } from '../helpers/run-workflow.js';
import { dollars } from '../../src/cli/markdown-tables.js';
import { freePort, missingStores, PG_PASSWORD, startPostgres, startRedis, type StoreServer } from '../helpers/stores.js';
import { inputTokensAtMost, priceOf, worstCaseCost } from '../../src/provider/pricing.js';
import { coordinate } from '../../src/provider/stores/coordinate.js';
import { FAN_OUT, fanOutScript, TEN_PER_FIVE_SECONDS } from '../fixtures/fan-out.js';

const missing = missingStores();
if (missing && process.env.CONCLAVE_REQUIRE_STORES) throw new Error(`the --coordinate tests must run here, but ${missing}`);
if (missing) process.stderr.write(`\n*** SKIPPING the --coordinate tests: ${missing} (apt-get install -y redis-server postgresql) ***\n\n`);

const KINDS = ['redis', 'postgres'] as const;
const costOf = (run: WorkflowRun) => (run.json.usage as { cost_usd: number }).cost_usd;
/** A relay whose calls cost little more than their worst case: a pool's arithmetic is easy to follow. */
const SMALL_RELAY = RELAY.replace('agents:', 'defaults: { max_tokens: 16 }\nagents:');
let pools = 0;
/** A pool name no other test of this store uses. */
const freshPool = (kind: string) => `${kind}-pool-${process.pid}-${++pools}`;

describe.skipIf(missing !== undefined)('--coordinate: one organisation, many runners', () => {
  const stores: Partial<Record<(typeof KINDS)[number], StoreServer>> = {};
  const urlOf = (kind: (typeof KINDS)[number]) => stores[kind]!.url;
  beforeAll(async () => {
    await Promise.all([startRedis().then((s) => (stores.redis = s)), startPostgres().then((s) => (stores.postgres = s))]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(Object.values(stores).map((s) => s.kill()));
  });

  it.each(KINDS)(
    '%s: three runs at once stay under one rate limit between them, and run near the rate it allows',
    async (kind) => {
      // Answers whose headers come a second after the server wrote them, as a model's first token
      // does: a window measured from when a word was seen reads short, and the runners overran it.
      const server: FakeAnthropic = await startFakeAnthropic(fanOutScript(8), { rateLimits: TEN_PER_FIVE_SECONDS, latencyMs: 1_000 });
      try {
        const runs = await Promise.all([1, 2, 3].map(() => runWorkflow(server, FAN_OUT(8), ['--coordinate', urlOf(kind)])));
        for (const run of runs) expect(run.code, run.stderr).toBe(0);
        expect(server.requests.filter((r) => r.agent.startsWith('reviewer-'))).toHaveLength(24);
        expect(server.refusals, 'refusals among the three runs').toBeLessThanOrEqual(2);
        expect(runs.flatMap((r) => r.events).filter((e) => e.type === 'rate_waited').length).toBeGreaterThan(0);
        // The limit lets its first 10 through at once, then one every 500 ms: the requests the server
        // took span at least that. A generous bound (docs/BENCHMARKS.md has the measured ratio): the
        // shared pacing once took ten times what the limit allows.
        const times = server.requests.map((r) => r.receivedAt);
        const allowedMs = ((times.length - TEN_PER_FIVE_SECONDS.requests.limit) * TEN_PER_FIVE_SECONDS.requests.windowMs) / TEN_PER_FIVE_SECONDS.requests.limit;
        expect(Math.max(...times) - Math.min(...times), 'how long the requests took to leave').toBeLessThan(3 * allowedMs);
      } finally {
        await server.close();
      }
    },
    90_000,
  );

  it.each(KINDS)(
    '%s: a spend pool stops the second of two runs at the limit (exit 3), their costs within its cap',
    async (kind) => {
      /** The relay on a server of its own: the script numbers each agent's calls. */
      const relay = async (args: string[] = [], env: NodeJS.ProcessEnv = {}) => {
        const server = await startFakeAnthropic(relayScript());
        try {
          return { run: await runWorkflow(server, SMALL_RELAY, args, { env }), requests: server.requests };
        } finally {
          await server.close();
        }
      };
      // What the relay's calls cost, and the most each could cost: the cap lets one run through, not two.
      const calibration = await relay();
      expect(calibration.run.code, calibration.run.stderr).toBe(0);
      const costs = calibration.run.events.filter((e) => e.type === 'model_call').map((e) => e.cost_usd as number);
      const price = priceOf(calibration.requests[0]!.body.model).price;
      const worst = calibration.requests.map((r) => worstCaseCost(inputTokensAtMost(r.bytes), 16, price));
      const cap = Math.max(...worst.map((w, i) => costs.slice(0, i).reduce((a, b) => a + b, 0) + w)) * 1.05;
      expect(cap, 'the cap is below what two runs cost').toBeLessThan(2 * costs.reduce((a, b) => a + b, 0));

      const name = freshPool(kind);
      // Two pools, the roomy one first: every call holds in both, under one id (on PostgreSQL that once broke the second hold and switched the pools off).
      const args = ['--coordinate', urlOf(kind), '--spend-pool', `${name}-org=10/day`, '--spend-pool', `${name}=${cap.toFixed(6)}/day`];
      const first = (await relay(args)).run;
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr, 'the store never failed').not.toContain('warning');
      // The second as a GitHub Actions step: its job summary says which pool stopped it and what it drew.
      const summary = join(mkdtempSync(join(tmpdir(), 'conclave-summary-')), 'summary.md');
      writeFileSync(summary, '');
      const second = (await relay(args, { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary })).run;
      expect(second.code, second.stderr).toBe(3);
      expect(second.stderr, 'the store never failed').not.toContain('warning');
      const jobSummary = readFileSync(summary, 'utf8');
      expect(jobSummary).toContain(`limit reached: spend_pool ${name}`);
      expect(jobSummary).toContain(`Spend pool ${name} (${dollars(Number(cap.toFixed(6)))} per day): this run drew`);
      expect(second.json.status).toBe('limit');
      expect(second.json.reason).toMatch(
        new RegExp(
          `^limit reached: spend_pool ${name} \\(\\$[0-9.]+ spent of \\$[0-9.]+ per day: \\$[0-9.]+ left, and the next call could cost up to \\$[0-9.]+; the pool has room again at \\d{4}-\\d\\d-\\d\\dT00:00:00\\.000Z`,
        ),
      );
      expect(costOf(first) + costOf(second)).toBeLessThanOrEqual(cap);
      // The session notes the pools its calls drew from; show says what each run drew (the job summary's table is the markdown's).
      expect(first.events.find((e) => e.type === 'spend_pools')).toMatchObject({
        pools: [
          { name: `${name}-org`, per: 'day' },
          { name, per: 'day' },
        ],
      });
      const shown = await conclave(['show', join(first.dir, first.json.session as string)]);
      expect(shown.stdout).toContain(`Spend pool ${name} (${dollars(Number(cap.toFixed(6)))} per day): this run drew ${dollars(costOf(first))}`);
      const markdown = await conclave(['show', '--format', 'markdown', join(second.dir, second.json.session as string)]);
      expect(markdown.stdout).toContain(`Spend pool ${name}`);
      // Resumable once the pool has room (here: a larger cap), and then it finishes.
      const server = await startFakeAnthropic(relayScript());
      try {
        const resumed = await conclave(
          [
            'resume',
            second.json.session as string,
            '--json',
            '--coordinate',
            urlOf(kind),
            '--spend-pool',
            `${name}-org=10/day`,
            '--spend-pool',
            `${name}=${(2 * cap).toFixed(6)}/day`,
          ],
          {
            cwd: second.dir,
            env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
          },
        );
        expect(resumed.code, resumed.stderr).toBe(0);
      } finally {
        await server.close();
      }
    },
    60_000,
  );

  it.each(KINDS)("%s: a call the pool has no room for waits while the run's own calls are in flight, then goes when they settle for less", async (kind) => {
    // Each call may cost up to ~$0.045 (4,096 output tokens at Sonnet 5.5's $10 per million, and
    // its input) and costs ~$0.002: $0.07 holds one call's worst case at a time, not two.
    const server = await startFakeAnthropic({
      lead: (r) => ({ text: r.call === 1 ? '@a @b check your part.' : 'Thanks.' }),
      a: () => ({ text: 'a: fine', delayMs: 300 }),
      b: () => ({ text: 'b: fine', delayMs: 300 }),
    });
    try {
      const workflow =
        'name: two\ndefaults: { max_tokens: 4096 }\nagents:\n  lead: { role: manager }\n  a: { role: worker }\n  b: { role: worker }\nkickoff: Go.\n';
      const run = await runWorkflow(server, workflow, ['--coordinate', urlOf(kind), '--spend-pool', `${freshPool(kind)}=0.07/day`]);
      expect(run.code, run.stderr).toBe(0);
      const [a, b] = [server.of('a')[0]!, server.of('b')[0]!].sort((x, y) => x.receivedAt - y.receivedAt);
      expect(b!.receivedAt, 'the second worker asked once the first was answered').toBeGreaterThanOrEqual(a!.answeredAt!);
      expect(costOf(run)).toBeLessThanOrEqual(0.07);
    } finally {
      await server.close();
    }
  });

  it.each(KINDS)(
    "%s: a runner whose clock is 5 minutes ahead does not take another's live hold for an expired one: the store's clock decides",
    async (kind) => {
      // As in the test above: $0.07 holds one call's worst case at a time, not two. The first run's
      // call is slow; the second starts while it is in flight, on a runner whose clock is wrong.
      const server = await startFakeAnthropic({
        lead: (r) => ({ text: r.call === 1 ? '@a check your part.' : 'Thanks.', delayMs: r.call === 1 ? 2_500 : 0 }),
        a: () => ({ text: 'a: fine' }),
      });
      try {
        const workflow = 'name: one\ndefaults: { max_tokens: 4096 }\nagents:\n  lead: { role: manager }\n  a: { role: worker }\nkickoff: Go.\n';
        const args = ['--coordinate', urlOf(kind), '--spend-pool', `${freshPool(kind)}=0.07/day`];
        const first = runWorkflow(server, workflow, args);
        while (server.requests.length === 0) await new Promise((r) => setTimeout(r, 20));
        const skewed = {
          NODE_OPTIONS: `--import ${new URL('../fixtures/skewed-clock.mjs', import.meta.url).href}`,
          CONCLAVE_TEST_CLOCK_SKEW_MS: String(5 * 60_000),
        };
        const second = await runWorkflow(server, workflow, args, { env: skewed });
        expect((await first).code).toBe(0);
        expect(second.code, second.stderr).toBe(0);
        const leads = server.of('lead').sort((x, y) => x.receivedAt - y.receivedAt);
        expect(leads[1]!.receivedAt, "the second run's first call waited for the first's hold").toBeGreaterThanOrEqual(leads[0]!.answeredAt!);
      } finally {
        await server.close();
      }
    },
  );

  it.each(KINDS)('%s: a hold of a runner that stopped renewing it expires; a settled call counts what it cost', async (kind) => {
    const store = await coordinate(urlOf(kind));
    try {
      const start = Date.now();
      const window = { pool: freshPool(kind), start, keepMs: 60_000 };
      expect(await store.ledger.reserve(window, 'dead:1', 700, 1000, 300)).toMatchObject({ granted: true, spent: 0, held: 0 });
      expect(await store.ledger.reserve(window, 'live:1', 700, 1000, 60_000)).toMatchObject({ granted: false, held: 700 });
      await new Promise((r) => setTimeout(r, 400));
      expect(await store.ledger.reserve(window, 'live:1', 700, 1000, 60_000)).toMatchObject({ granted: true, spent: 0, held: 0 });
      await store.ledger.settle(window, 'live:1', 250);
      expect(await store.ledger.reserve(window, 'live:2', 800, 1000, 60_000)).toMatchObject({ granted: false, spent: 250, held: 0 });
      expect(await store.ledger.reserve(window, 'live:2', 750, 1000, 300)).toMatchObject({ granted: true, spent: 250 });
      await store.ledger.renew(window, ['live:2'], 60_000);
      await new Promise((r) => setTimeout(r, 400));
      expect(await store.ledger.reserve(window, 'live:3', 1, 1000, 60_000), 'a renewed hold stays').toMatchObject({ granted: false, held: 750 });
    } finally {
      await store.close();
    }
  });

  it.each(KINDS)(
    '%s stopped mid-run with a spend pool: the run stops at the limit (exit 3, resumable), keeping every paid answer; without a pool it goes on under its own rate limits',
    async (kind) => {
      for (const withPool of [true, false]) {
        const store = kind === 'redis' ? await startRedis() : await startPostgres();
        let stopping: Promise<void> | undefined;
        const server = await startFakeAnthropic(
          {
            lead: relayScript().lead,
            helper: () => {
              stopping = store.kill();
              return { text: '4', delayMs: 300 };
            },
          },
          { rateLimits: { requests: { limit: 50, windowMs: 60_000 } } },
        );
        try {
          const started = Date.now();
          const pool = withPool ? ['--spend-pool', `${freshPool(kind)}=5/day`] : [];
          const run = await runWorkflow(server, RELAY, ['--coordinate', store.url, ...pool, '--rate-limit', 'rpm=40', '--timeout', '60s']);
          await stopping;
          expect(Date.now() - started).toBeLessThan(30_000);
          expect(run.stderr).not.toContain(PG_PASSWORD);
          expect(run.stderr).not.toMatch(/\n\s+at /);
          if (withPool) {
            expect(run.code, run.stderr).toBe(3);
            expect(run.json.reason).toMatch(
              new RegExp(
                `^limit reached: spend_pool ${kind}-pool-\\S+ cannot be checked: the --coordinate store ${kind}://\\S*127\\.0\\.0\\.1:${store.port}\\S* failed \\(.+\\); resume once it answers$`,
              ),
            );
            // The helper's answer, paid while the store went away, is kept; no call left unchecked after it.
            expect(server.requests).toHaveLength(2);
            expect(run.events.filter((e) => e.type === 'model_call')).toHaveLength(2);
            expect(run.events.at(-1)).toMatchObject({ type: 'run_ended', status: 'limit' });
          } else {
            expect(run.code, run.stderr).toBe(0);
            expect(server.requests).toHaveLength(3);
            expect(run.json.outputs).toEqual({ answer: '4' });
            const warnings = run.stderr.split('\n').filter((l) => l.startsWith('conclave: warning:'));
            expect(warnings, run.stderr).toHaveLength(1);
            expect(warnings[0]).toMatch(
              new RegExp(
                `^conclave: warning: the --coordinate store ${kind}://.*127\\.0\\.0\\.1:${store.port}\\S* failed \\(.+\\); the rate limits go on in this process$`,
              ),
            );
          }
        } finally {
          await server.close();
          await store.kill();
        }
      }
    },
    90_000,
  );

  it.each(KINDS)(
    '%s: a pool whose record in the store holds no amount stops the run with exit 2, saying so, never spending past the cap or printing a negative sum',
    async (kind) => {
      const server = await startFakeAnthropic(relayScript());
      try {
        const day = Math.floor(Date.now() / 86_400_000) * 86_400_000;
        const poisons = kind === 'redis' ? ['hash', 'abc', 'nan', 'inf', '-5', '99999999999999999999'] : ['-5', '9223372036854775807'];
        for (const poison of poisons) {
          const name = freshPool(kind);
          if (kind === 'redis') {
            const key = `conclave:pool:${name}:${day}:spent`;
            if (poison === 'hash') execFileSync('redis-cli', ['-p', String(stores.redis!.port), 'HSET', key, 'spent', '0']);
            else execFileSync('redis-cli', ['-p', String(stores.redis!.port), 'SET', key, poison]);
          } else {
            const pg = (await import('pg')).default;
            const client = new pg.Client({ connectionString: urlOf(kind) });
            await client.connect();
            await client.query('INSERT INTO conclave_spend VALUES ($1, $2, $3)', [name, day, poison]);
            await client.end();
          }
          const run = await runWorkflow(server, SMALL_RELAY, ['--coordinate', urlOf(kind), '--spend-pool', `${name}=0.012/day`]);
          expect(run.code, `${poison}: ${run.stderr}`).toBe(2);
          expect(run.json.reason, poison).toMatch(/spend pool.* (hold something that is not an amount|which is no amount a pool holds)/);
          expect(run.stderr).not.toMatch(/\$-|\n\s+at /);
          expect(
            run.events.filter((e) => e.type === 'model_call'),
            poison,
          ).toHaveLength(0);
        }
      } finally {
        await server.close();
      }
    },
    60_000,
  );

  it.each(KINDS)(
    '%s: a run closed as stale is noted here and in the store: a copy taken before the close is refused on both machines (issue 80)',
    async (kind) => {
      const server = await startFakeAnthropic({
        lead: [
          { tools: [{ name: 'propose', input: { id: 'verdict', question: 'Merge?', options: ['approve', 'reject'], voters: ['@octocat'] } }] },
          { text: '' },
        ],
      });
      const github = await startFakeGitHub(REPOSITORY, PULL);
      github.people.head = HEAD;
      github.people.permissions = { octocat: 'write' };
      const workflow = 'name: verdict\npeople: { voters: ["@octocat"] }\nagents:\n  lead: { role: manager }\nkickoff: Decide.\n';
      const jobEnv = (dir: string) => pullRequestJob(dir, github.url);
      try {
        const dir = mkdtempSync(join(tmpdir(), 'conclave-closed-'));
        const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY, ...jobEnv(dir) };
        const parked = await runWorkflow(server, workflow, ['--park', '--coordinate', urlOf(kind)], { dir, env });
        expect(parked.code, parked.stderr).toBe(75);
        const session = parked.json.session as string;
        const digest = (parked.json.waiting_for as { ballot: { digest: string } }[])[0]!.ballot.digest;
        // Copies of the parked session: one kept here, one on another machine with nothing of this one's .conclave/.
        writeFileSync(join(dir, 'before-the-close.jsonl'), readFileSync(join(dir, session)));
        const elsewhere = mkdtempSync(join(tmpdir(), 'conclave-elsewhere-'));
        writeFileSync(join(elsewhere, 'workflow.yml'), workflow);
        writeFileSync(join(elsewhere, 'before-the-close.jsonl'), readFileSync(join(dir, session)));
        github.people.head = '2'.repeat(40);
        const closed = await conclave(['resume', session, '--vote', 'verdict=approve', '--voter', 'octocat', '--digest', digest, '--coordinate', urlOf(kind)], {
          cwd: dir,
          env,
        });
        expect(closed.code, closed.stderr).toBe(2);
        expect(closed.stderr).toContain('this run is now closed as stale');
        const calls = server.requests.length;
        const here = await conclave(['resume', 'before-the-close.jsonl'], { cwd: dir, env });
        expect(here.code).toBe(2);
        expect(here.stderr).toMatch(/before-the-close\.jsonl is generation 1 of run \S+, and the run ended since \(stale\), as /);
        const there = await conclave(['resume', 'before-the-close.jsonl', '--coordinate', urlOf(kind)], {
          cwd: elsewhere,
          env: { ...env, ...jobEnv(elsewhere) },
        });
        expect(there.code).toBe(2);
        expect(there.stderr).toMatch(/and the run ended since \(stale\), as \S+ \(noted in the --coordinate store\)/);
        expect(server.requests.length).toBe(calls);
        // Control: without the store that machine could not know, and would go on with the copy.
        const unknowing = await conclave(['resume', 'before-the-close.jsonl'], { cwd: elsewhere, env: { ...env, ...jobEnv(elsewhere) } });
        expect(unknowing.code, unknowing.stderr).not.toBe(2);
      } finally {
        await server.close();
        await github.close();
      }
    },
    60_000,
  );

  it.each(KINDS)(
    "%s: a copy of an older generation is refused on another machine: the store every runner shares knows the run's newest",
    async (kind) => {
      const server = await startFakeAnthropic({
        lead: [
          { text: '@helper go.' },
          { tools: [{ name: 'complete', input: { status: 'success', summary: 'done' } }] },
          { tools: [{ name: 'complete', input: { status: 'success', summary: 'done again' } }] },
        ],
        helper: [{ text: 'Done.' }, { text: 'Done.' }],
      });
      const workflow = 'name: two\nagents:\n  lead: { role: manager }\n  helper: { role: worker }\nkickoff: Go.\n';
      const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
      try {
        const first = await runWorkflow(server, workflow, ['--max-turns', '1', '--coordinate', urlOf(kind)]);
        expect(first.code, first.stderr).toBe(3);
        const session = first.json.session as string;
        // Another machine gets the session as it was then (an artifact, a copy), with nothing of this one's .conclave/.
        const elsewhere = mkdtempSync(join(tmpdir(), 'conclave-elsewhere-'));
        execFileSync('mkdir', ['-p', join(elsewhere, '.conclave', 'sessions')]);
        writeFileSync(join(elsewhere, 'workflow.yml'), workflow);
        writeFileSync(join(elsewhere, session), readFileSync(join(first.dir, session)));
        const resumed = await conclave(['resume', session, '--max-turns', '6', '--coordinate', urlOf(kind)], { cwd: first.dir, env });
        expect(resumed.code, resumed.stderr).toBe(0);
        const calls = server.requests.length;
        const stale = await conclave(['resume', session, '--max-turns', '6', '--coordinate', urlOf(kind)], { cwd: elsewhere, env });
        expect(stale.code).toBe(2);
        expect(stale.stderr).toMatch(/is generation 1 of run \S+, and generation 2 \(success\) was written since, as \S+ \(noted in the --coordinate store\)/);
        expect(server.requests.length).toBe(calls);
        // Without the store, that machine could not know: the copy would be resumed, and paid for again.
        const unknowing = await conclave(['resume', session, '--max-turns', '6'], { cwd: elsewhere, env });
        expect(unknowing.code, unknowing.stderr).toBe(0);
        expect(server.requests.length).toBeGreaterThan(calls);
      } finally {
        await server.close();
      }
    },
    60_000,
  );

  it('postgres: a rate-limit record set by hand (used up for ever, or from a clock far ahead) holds no run (Redis keys carry their own expiry)', async () => {
    const server = await startFakeAnthropic(relayScript());
    try {
      const first = await runWorkflow(server, RELAY, ['--coordinate', urlOf('postgres'), '--rate-limit', 'rpm=40']);
      expect(first.code, first.stderr).toBe(0);
      // Every record of the limits used up a million times over, at a time far ahead: no limiter writes one.
      const pg = (await import('pg')).default;
      const client = new pg.Client({ connectionString: urlOf('postgres') });
      await client.connect();
      const { rowCount } = await client.query(
        `UPDATE conclave_limits SET state = '{"tokens": -1000000, "at": 9000000000000000, "log": [[9000000000000000, 1000000]]}'`,
      );
      await client.end();
      expect(rowCount).toBeGreaterThan(0);
      const started = Date.now();
      const second = await runWorkflow(server, RELAY, ['--coordinate', urlOf('postgres'), '--rate-limit', 'rpm=40', '--timeout', '60s']);
      expect(second.code, second.stderr).toBe(0);
      expect(Date.now() - started, 'no wait on a record that never expires').toBeLessThan(15_000);
    } finally {
      await server.close();
    }
  }, 90_000);

  it.each(KINDS)('%s: a URL where no store answers is exit 2 at once, naming it, its password hidden', async (kind) => {
    const server = await startFakeAnthropic(relayScript());
    try {
      const port = await freePort();
      const url = `${kind}://conclave:${PG_PASSWORD}@127.0.0.1:${port}/0`;
      const started = Date.now();
      const run = await runWorkflow(server, RELAY, ['--coordinate', url]);
      expect(run.code, run.stderr).toBe(2);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(run.stderr).toContain(`--coordinate ${kind}://***@127.0.0.1:${port}/0 does not answer`);
      expect(run.stderr).not.toContain(PG_PASSWORD);
      expect(server.requests, 'no model was called').toHaveLength(0);
      expect(run.events, 'no session was written').toEqual([]);
    } finally {
      await server.close();
    }
  });
});

describe.skipIf(missing !== undefined)('--coordinate: a store that answers but cannot be used', () => {
  it.each(KINDS)('%s: exit 2 before the run, saying why', async (kind) => {
    const store = kind === 'redis' ? await startRedis() : await startPostgres();
    const server = await startFakeAnthropic(relayScript());
    try {
      // Something else's data where conclave keeps its own: a key of another kind, a table of other columns.
      if (kind === 'redis') execFileSync('redis-cli', ['-p', String(store.port), 'SET', 'conclave:pool:conclave-probe:0:holds', 'not a sorted set']);
      else {
        const pg = (await import('pg')).default;
        const client = new pg.Client({ connectionString: store.url });
        await client.connect();
        await client.query('CREATE TABLE conclave_pool_holds (id text PRIMARY KEY)');
        await client.end();
      }
      const run = await runWorkflow(server, RELAY, ['--coordinate', store.url]);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(new RegExp(`--coordinate ${kind}://\\S+ answers but cannot be used: `));
      expect(run.stderr).not.toContain(PG_PASSWORD);
      expect(server.requests).toHaveLength(0);
    } finally {
      await server.close();
      await store.kill();
    }
  });
});

describe.skipIf(missing !== undefined)('--coordinate: a PostgreSQL role that may only use the tables', () => {
  it('runs once an owner has made them: a role without the right to create tables is not refused for it', async () => {
    const store = await startPostgres();
    const server = await startFakeAnthropic(relayScript());
    const pg = (await import('pg')).default;
    const admin = new pg.Client({ connectionString: store.url });
    try {
      await admin.connect();
      await admin.query("CREATE ROLE ci_runner LOGIN PASSWORD 'ci-runner-password'");
      const url = new URL(store.url);
      url.username = 'ci_runner';
      url.password = 'ci-runner-password';
      // Before the tables exist: the role cannot make them, and is told so before the run.
      const early = await runWorkflow(server, RELAY, ['--coordinate', url.toString()]);
      expect(early.code, early.stderr).toBe(2);
      expect(early.stderr).toContain('--coordinate postgres://***@');
      expect(early.stderr).toContain(
        'cannot make its tables (a role that may create tables makes them once; this one then needs only their use): permission denied',
      );
      expect(early.stderr).not.toContain('ci-runner-password');
      expect(server.requests).toHaveLength(0);
      // The owner's first run makes conclave's tables; the CI role may then only read and write them.
      const first = await runWorkflow(server, RELAY, ['--coordinate', store.url]);
      expect(first.code, first.stderr).toBe(0);
      await admin.query('GRANT SELECT, INSERT, UPDATE, DELETE ON conclave_limits, conclave_spend, conclave_pool_holds, conclave_runs TO ci_runner');
      const run = await runWorkflow(server, RELAY, ['--coordinate', url.toString(), '--rate-limit', 'rpm=40']);
      expect(run.code, run.stderr).toBe(0);
      const { rows } = await admin.query('SELECT count(*)::int AS n FROM conclave_limits');
      expect(rows[0].n, 'its limits live in the tables it was given').toBeGreaterThan(0);
    } finally {
      await admin.end().catch(() => {});
      await server.close();
      await store.kill();
    }
  }, 60_000);
});

describe('--rate-limit, --coordinate and --spend-pool refuse what they cannot use', () => {
  it.each([
    [['--rate-limit', 'rpm=fast'], /--rate-limit takes rpm=N,itpm=N,otpm=N/],
    [['--spend-pool', 'org=20/day'], /--spend-pool needs --coordinate URL/],
    [['--coordinate', 'redis://127.0.0.1:1', '--spend-pool', 'org=twenty'], /--spend-pool takes NAME=DOLLARS\/WINDOW/],
    [['--coordinate', 'redis://127.0.0.1:1', '--spend-pool', 'org=99999999999999/day'], /--spend-pool takes NAME=DOLLARS\/WINDOW.*at most 1000000000/],
    [['--coordinate', 'redis://127.0.0.1:1', '--spend-pool', 'org=20/fortnight'], /--spend-pool takes NAME=DOLLARS\/WINDOW/],
    [['--coordinate', 'redis://127.0.0.1:1', '--spend-pool', 'org=20/day', '--spend-pool', 'org=30/day'], /names the pool org twice/],
    [['--coordinate', 'mysql://127.0.0.1/x'], /--coordinate takes a redis:\/\/, rediss:\/\/, postgres:\/\/ or postgresql:\/\/ URL; got mysql:/],
  ])('%j', async (args, message) => {
    const server = await startFakeAnthropic(relayScript());
    try {
      const run = await runWorkflow(server, RELAY, args as string[]);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(server.requests).toHaveLength(0);
    } finally {
      await server.close();
    }
  });
});
