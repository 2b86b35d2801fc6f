import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastToolResult, startFakeAnthropic } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';
import { missingStores, startRedis, type StoreServer } from '../helpers/stores.js';

/**
 * A recorded run whose calls settled against a spend pool (I/O after each answer) records answers
 * back to back before the tools that follow them; a replay or a resume, which makes no such I/O,
 * must still produce the events in the recorded order (issue 39: a session stopped by a pool could
 * be resumed once, never again).
 */
const missing = missingStores();
if (missing && process.env.CONCLAVE_REQUIRE_STORES) throw new Error(`the replay-order tests must run here, but ${missing}`);

const TEAM = `
name: three
defaults: { max_tokens: 256 }
agents:
  lead: { role: manager }
  r1: { role: worker, tools: [list_files] }
  r2: { role: worker, tools: [list_files] }
  r3: { role: worker, tools: [list_files] }
kickoff: "@lead start"
`;

const reviewer = (name: string) => (r: Parameters<typeof lastToolResult>[0]) =>
  lastToolResult(r) ? { text: `${name} done` } : { tools: [{ name: 'list_files', input: { path: '.' } }], delayMs: 300 };

describe.skipIf(missing !== undefined)('replay follows the recorded order whatever waits lay between', () => {
  let redis: StoreServer;
  beforeAll(async () => {
    redis = await startRedis();
  }, 30_000);
  afterAll(async () => redis?.kill());

  it('answers settled against a spend pool: replayed, and resumed twice from a pool stop, in the recorded order', async () => {
    // Each answer follows from the request alone: the same server serves the runs and their resumes.
    const lead = (r: Parameters<typeof lastToolResult>[0]) => ({ text: JSON.stringify(r.body.messages).includes(' done') ? 'thanks' : '@r1 @r2 @r3 go' });
    const server = await startFakeAnthropic({ lead, r1: reviewer('r1'), r2: reviewer('r2'), r3: reviewer('r3') });
    try {
      const pool = `order-${process.pid}`;
      const run = await runWorkflow(server, TEAM, ['--coordinate', redis.url, '--spend-pool', `${pool}=50/day`]);
      expect(run.code, run.stderr).toBe(0);
      for (let i = 0; i < 2; i++) {
        const replay = await conclave(['run', 'workflow.yml', '--replay', String(run.json.session), '--json', '--session', `replay-${i}.jsonl`], {
          cwd: run.dir,
          env: { ANTHROPIC_API_KEY: TEST_API_KEY },
        });
        expect(replay.code, replay.stdout.slice(0, 600)).toBe(0);
      }
      // Stopped by a pool, then resumed under a cap raised a little (it stops again), then under a larger one, then replayed.
      const small = `${pool}-small`;
      const total = (run.json.usage as { cost_usd: number }).cost_usd;
      const stopped = await runWorkflow(server, TEAM, ['--coordinate', redis.url, '--spend-pool', `${small}=${(total * 0.4).toFixed(6)}/day`]);
      expect(stopped.code, stopped.stderr).toBe(3);
      const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
      const codes: number[] = [];
      for (const cap of [(total * 0.55).toFixed(6), (total * 0.7).toFixed(6), '5']) {
        const resumed = await conclave(['resume', String(stopped.json.session), '--json', '--coordinate', redis.url, '--spend-pool', `${small}=${cap}/day`], {
          cwd: stopped.dir,
          env,
        });
        expect([0, 3], `resume under ${cap}: ${resumed.stdout.slice(0, 600)} ${resumed.stderr}`).toContain(resumed.code);
        codes.push(resumed.code!);
        if (resumed.code === 0) break;
      }
      expect(codes.at(-1)).toBe(0);
      expect(codes.length, 'stopped by the pool again before it finished').toBeGreaterThanOrEqual(2);
      const replayed = await conclave(['run', 'workflow.yml', '--replay', String(stopped.json.session), '--json', '--session', 'replayed.jsonl'], {
        cwd: stopped.dir,
        env: { ANTHROPIC_API_KEY: TEST_API_KEY },
      });
      expect(replayed.code, replayed.stdout.slice(0, 600)).toBe(0);
    } finally {
      await server.close();
    }
  }, 60_000);
});
