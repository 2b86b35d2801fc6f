import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RELAY } from '../fixtures/relay.js';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { runWorkflow, type WorkflowRun } from '../helpers/run-workflow.js';
import { missingStores, PG_PASSWORD, PG_USER, startPostgres, startRedis, type StoreServer } from '../helpers/stores.js';

const missing = missingStores();
if (missing && process.env.CONCLAVE_REQUIRE_STORES) throw new Error(`the cache store tests must run here, but ${missing}`);
if (missing) process.stderr.write(`\n*** SKIPPING the Redis and PostgreSQL cache tests: ${missing} (apt-get install -y redis-server postgresql) ***\n\n`);

/** A relay whose helper may do something (stop the store) while it answers. */
function relayServer(onHelper: () => void = () => {}): Promise<FakeAnthropic> {
  return startFakeAnthropic({
    lead: (r: { call: number }) => ({ text: r.call === 1 ? '@helper what is 2 + 2?' : 'Thanks.' }),
    helper: () => {
      onHelper();
      return { text: '4' };
    },
  });
}

/** Runs the relay, timing it; no process may be left in its directory afterwards. */
async function timedRun(server: FakeAnthropic, args: string[], dir = mkdtempSync(join(tmpdir(), 'conclave-store-'))): Promise<WorkflowRun & { ms: number }> {
  const started = Date.now();
  const run = await runWorkflow(server, RELAY, ['--json', ...args], { dir });
  const ms = Date.now() - started;
  expect(processesIn(dir), 'no process is left behind').toEqual([]);
  return { ...run, ms };
}

/** Processes whose working directory is `dir`. */
function processesIn(dir: string): string[] {
  return readdirSync('/proc').flatMap((pid) => {
    if (!/^\d+$/.test(pid)) return [];
    try {
      return readlinkSync(`/proc/${pid}/cwd`) === dir ? [pid] : [];
    } catch {
      return [];
    }
  });
}

const paid = (run: WorkflowRun) => run.events.filter((e) => e.type === 'model_call' && e.cached !== true).length;
const costOf = (run: WorkflowRun) => (run.json.usage as { cost_usd: number }).cost_usd;

describe.skipIf(missing !== undefined)('the response cache on real Redis and PostgreSQL servers', () => {
  let redis: StoreServer;
  let postgres: StoreServer;
  beforeAll(async () => {
    // Each kept as soon as it is up, so that afterAll stops it even when the other failed to start.
    await Promise.all([startRedis().then((s) => (redis = s)), startPostgres().then((s) => (postgres = s))]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([redis?.kill(), postgres?.kill()]);
  });

  it.each(['redis', 'postgres'])('%s: the first run pays, the second pays nothing; two runs at once share it', async (kind) => {
    const store = kind === 'redis' ? redis : postgres;
    const url = `${store.url}${kind === 'redis' ? '/3' : ''}`;
    const server = await relayServer();
    try {
      const first = await timedRun(server, ['--response-cache', url]);
      expect(first.code, first.stderr).toBe(0);
      expect(server.requests).toHaveLength(3);
      expect(costOf(first)).toBeGreaterThan(0);
      const second = await timedRun(server, ['--response-cache', url]);
      expect(second.code, second.stderr).toBe(0);
      expect(server.requests, 'the second run is answered from the shared cache').toHaveLength(3);
      expect(costOf(second)).toBe(0);
      expect(second.json.outputs).toEqual(first.json.outputs);

      const other = RELAY.replace('What is 2 + 2?', 'What is 3 + 3?');
      const together = await Promise.all([1, 2].map(() => runWorkflow(server, other, ['--response-cache', url])));
      for (const run of together) expect(run.code, run.stderr).toBe(0);
      const afterTogether = server.requests.length;
      expect(afterTogether - 3, 'two runs at once pay at most twice').toBeLessThanOrEqual(6);
      const third = await runWorkflow(server, other, ['--response-cache', url]);
      expect(third.code).toBe(0);
      expect(server.requests).toHaveLength(afterTogether);
    } finally {
      await server.close();
    }
  });

  it.each(['redis', 'postgres'])(
    '%s stopped mid-run: the run goes on uncached and keeps every paid answer',
    async (kind) => {
      const store = kind === 'redis' ? await startRedis() : await startPostgres();
      let stopping: Promise<void> | undefined;
      const server = await relayServer(() => {
        // Killed while the helper's answer is on its way: the answer is paid and must be kept.
        stopping = store.kill();
      });
      try {
        const run = await timedRun(server, ['--response-cache', store.url, '--timeout', '60s']);
        await stopping;
        expect(run.code, run.stderr).toBe(0);
        expect(run.ms, 'within its limits, and far less').toBeLessThan(20_000);
        expect(server.requests).toHaveLength(3);
        expect(paid(run), 'every paid answer is in the session').toBe(3);
        const recordedCost = run.events.filter((e) => e.type === 'model_call').reduce((sum, e) => sum + (e.cost_usd as number), 0);
        expect(costOf(run)).toBeCloseTo(recordedCost, 10);
        expect(costOf(run)).toBeGreaterThan(0);
        expect(run.json.outputs).toEqual({ answer: '4' });
        const warnings = run.stderr.split('\n').filter((l) => l.includes('the run goes on without it'));
        expect(warnings, run.stderr).toHaveLength(1);
        expect(warnings[0]).toMatch(
          new RegExp(`^conclave: warning: the response cache ${kind}://.*127\\.0\\.0\\.1:${store.port}.* failed \\(.+\\); the run goes on without it$`),
        );
        expect(run.stderr).not.toContain(PG_PASSWORD);
        expect(run.stderr).not.toMatch(/\n\s+at /);
      } finally {
        await server.close();
        await store.kill();
      }
    },
    60_000,
  );

  it('refuses a store it cannot use, before any model call, naming it with its password hidden', async () => {
    const locked = await startRedis({ password: 'the-redis-password' });
    // A port that accepts connections and never answers: the store that hung runs before.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentPort = (silent.address() as AddressInfo).port;
    const server = await relayServer();
    const refusedPort = `redis://127.0.0.1:1`;
    const cases: [string, RegExp][] = [
      [refusedPort, /^conclave: the response cache redis:\/\/127\.0\.0\.1:1 cannot be used: .*ECONNREFUSED.*\n$/],
      [`redis://127.0.0.1:${silentPort}`, /^conclave: the response cache redis:\/\/127\.0\.0\.1:\d+ cannot be used: .+\n$/],
      [
        `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${silentPort}/postgres`,
        /^conclave: the response cache postgres:\/\/\*\*\*@127\.0\.0\.1:\d+\/postgres cannot be used: .+\n$/,
      ],
      [`redis://:wrong-password@127.0.0.1:${locked.port}`, /^conclave: the response cache redis:\/\/\*\*\*@127\.0\.0\.1:\d+ cannot be used: WRONGPASS.*\n$/],
      [`${locked.url}/99`, /^conclave: the response cache redis:\/\/\*\*\*@127\.0\.0\.1:\d+\/99 cannot be used: .*DB index is out of range.*\n$/],
      [
        `postgres://${PG_USER}:wrong-password@127.0.0.1:${postgres.port}/postgres`,
        /^conclave: the response cache postgres:\/\/\*\*\*@127\.0\.0\.1:\d+\/postgres cannot be used: password authentication failed for user "conclave"\n$/,
      ],
      [
        `postgres://${PG_USER}@127.0.0.1:${postgres.port}/postgres`,
        /^conclave: the response cache postgres:\/\/\*\*\*@127\.0\.0\.1:\d+\/postgres cannot be used: the server asks for a password, and the URL gives none\n$/,
      ],
      [
        postgres.url.replace(/\/postgres$/, '/nonexistent'),
        /^conclave: the response cache postgres:\/\/\*\*\*@127\.0\.0\.1:\d+\/nonexistent cannot be used: database "nonexistent" does not exist\n$/,
      ],
      [
        `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:1/postgres`,
        /^conclave: the response cache postgres:\/\/\*\*\*@127\.0\.0\.1:1\/postgres cannot be used: .*ECONNREFUSED.*\n$/,
      ],
    ];
    try {
      for (const [url, message] of cases) {
        const run = await timedRun(server, ['--response-cache', url]);
        expect(run.code, `${url}: ${run.stderr}`).toBe(2);
        expect(run.stderr, url).toMatch(message);
        expect(run.stderr).not.toMatch(/wrong-password|the-redis-password|cache-test-password/);
        expect(run.ms, `${url} is refused quickly`).toBeLessThan(10_000);
        expect(readdirSync(run.dir), 'nothing is written').toEqual(['workflow.yml']);
      }
      expect(server.requests, 'no model call').toHaveLength(0);
    } finally {
      await server.close();
      await locked.kill();
      silent.close();
    }
  }, 120_000);

  it('postgres: a role that may only use the table an owner made shares the cache, and is not refused for lacking the right to create it', async () => {
    const server = await relayServer();
    const pg = (await import('pg')).default;
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    try {
      const database = `cache_role_${process.pid}`;
      await admin.query(`CREATE DATABASE ${database}`);
      await admin.query("CREATE ROLE cache_runner LOGIN PASSWORD 'cache-runner-password'");
      const owner = new URL(postgres.url);
      owner.pathname = `/${database}`;
      // The owner's run makes the adapter's table; the CI role is given only its use.
      const first = await timedRun(server, ['--response-cache', owner.toString()]);
      expect(first.code, first.stderr).toBe(0);
      const inDatabase = new pg.Client({ connectionString: owner.toString() });
      await inDatabase.connect();
      await inDatabase.query('GRANT SELECT, INSERT, UPDATE, DELETE ON keyv TO cache_runner');
      await inDatabase.end();
      const runner = new URL(owner);
      runner.username = 'cache_runner';
      runner.password = 'cache-runner-password';
      const second = await timedRun(server, ['--response-cache', runner.toString()]);
      expect(second.code, second.stderr).toBe(0);
      expect(second.stderr).not.toContain('cache');
      expect(costOf(second), 'answered from the cache the owner filled').toBe(0);
      expect(server.requests).toHaveLength(3);
    } finally {
      await admin.end();
      await server.close();
    }
  }, 60_000);
});

describe('the response cache in an SQLite file it cannot use', () => {
  it('a corrupt file is refused before any model call, naming the file', async () => {
    const server = await relayServer();
    const dir = mkdtempSync(join(tmpdir(), 'conclave-store-'));
    writeFileSync(join(dir, 'corrupt.sqlite'), 'this is not an SQLite database, only text pretending to be one.\n'.repeat(100));
    try {
      const run = await timedRun(server, ['--response-cache', 'corrupt.sqlite'], dir);
      expect(run.code).toBe(2);
      expect(run.stderr).toBe('conclave: the response cache corrupt.sqlite cannot be used: SQLITE_NOTADB: file is not a database\n');
      expect(server.requests).toHaveLength(0);
    } finally {
      await server.close();
    }
  });

  it('a read-only file is refused before any model call, naming the file', async (context) => {
    const server = await relayServer();
    const dir = mkdtempSync(join(tmpdir(), 'conclave-store-'));
    const cache = join(dir, 'ro');
    mkdirSync(cache);
    try {
      // A filled cache, then its file system made read-only (root writes through file modes).
      const filled = await timedRun(server, ['--response-cache', 'ro/cache.sqlite'], dir);
      expect(filled.code).toBe(0);
      const requests = server.requests.length;
      const readOnly = readOnlyMount(cache);
      if (!readOnly) {
        process.stderr.write('\n*** SKIPPING the read-only SQLite test: cannot mount a read-only file system here (needs root) ***\n\n');
        return context.skip();
      }
      try {
        const run = await timedRun(server, ['--response-cache', 'ro/cache.sqlite'], dir);
        expect(run.code, run.stderr).toBe(2);
        expect(run.stderr).toMatch(/^conclave: the response cache ro\/cache\.sqlite cannot be used: SQLITE_(READONLY|CANTOPEN)\b.*\n$/);
        expect(server.requests).toHaveLength(requests);
      } finally {
        readOnly();
      }
    } finally {
      await server.close();
    }
  });
});

/** Makes `dir` a read-only copy of itself (a tmpfs remounted read-only); the undo, or undefined without root. */
function readOnlyMount(dir: string): (() => void) | undefined {
  const saved = mkdtempSync(join(tmpdir(), 'conclave-ro-'));
  try {
    execFileSync('cp', ['-a', `${dir}/.`, saved]);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  execFileSync('cp', ['-a', `${saved}/.`, dir]);
  execFileSync('mount', ['-o', 'remount,ro', dir]);
  return () => execFileSync('umount', [dir]);
}
