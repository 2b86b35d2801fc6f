import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startFakeAnthropic, type RecordedRequest } from '../fake-anthropic/server.js';
import { CRASH_WORKFLOW, crashScript } from '../fixtures/crash-team.js';
import { BIN, conclave } from '../helpers/cli.js';
import { runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';
import { readEvents } from '../helpers/session.js';

const LATENCY = 25;
const KILLS = 20;

/** Two requests with the same key ask for the same thing. */
const keyOf = (r: RecordedRequest) => JSON.stringify([r.agent, r.body.system, r.body.messages]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('kill -9 at any moment, then resume', () => {
  it(`ends with the same outputs as an uninterrupted run, paying for nothing twice (${KILLS} kills)`, async () => {
    const baselineServer = await startFakeAnthropic(crashScript(LATENCY));
    const baseline = await runWorkflow(baselineServer, CRASH_WORKFLOW);
    await baselineServer.close();
    // Kill k comes once the session holds about k/20 of an uninterrupted run's events.
    const total = baseline.events.length;
    expect(baseline.code).toBe(0);
    expect(baseline.json.outputs).toEqual({ verdict: 'ship', summary: 'verdict ship', answers: 'part a ok / part b ok / part c ok' });

    const resumedAfter: number[] = [];
    for (let k = 0; k < KILLS; k++) {
      const server = await startFakeAnthropic(crashScript(LATENCY));
      const dir = mkdtempSync(join(tmpdir(), 'conclave-crash-'));
      writeFileSync(join(dir, 'workflow.yml'), CRASH_WORKFLOW);
      const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
      const child = spawn(process.execPath, [BIN, 'run', 'workflow.yml', '--quiet'], { cwd: dir, env: { ...process.env, ...env }, stdio: 'ignore' });
      const closed = new Promise((resolve) => child.on('close', resolve));
      const sessions = join(dir, '.conclave', 'sessions');
      const sessionFile = () => (existsSync(sessions) ? readdirSync(sessions).find((f) => f.endsWith('.jsonl')) : undefined);
      while (!sessionFile()) await sleep(1);
      const target = 1 + Math.floor((k * (total - 1)) / KILLS);
      const lines = () => readFileSync(join(sessions, sessionFile()!), 'utf8').split('\n').length - 2;
      while (lines() < target && child.exitCode === null) await sleep(1);
      child.kill('SIGKILL');
      await closed;
      const file = join(sessions, sessionFile()!);
      const before = readEvents(file);
      resumedAfter.push(before.length);
      const answeredBefore = server.requests.length;

      const resumed = await Promise.race([
        conclave(['resume', file, '--json', '--quiet'], { cwd: dir, env }),
        sleep(20_000).then(() => ({
          code: -1,
          stdout: '{}',
          stderr: `the resume did not end in 20 s; the file before it:\n${before.map((e) => JSON.stringify(e).slice(0, 120)).join('\n')}`,
        })),
      ]);
      const result = JSON.parse(resumed.stdout || '{}');
      const context = `kill ${k} after ${before.length} events: ${resumed.stderr}${result.reason ?? ''}`;
      if (before.some((e) => e.type === 'run_ended')) {
        expect(resumed.code, context).toBe(2); // it had finished before the kill
      } else {
        expect(resumed.code, context).toBe(0);
        expect(result.outputs, context).toEqual(baseline.json.outputs);
      }

      // No request whose response the file held was made again.
      const paidIds = new Set(before.filter((e) => e.type === 'model_call').map((e) => (e.response as { id: string }).id));
      const paid = new Set(server.requests.filter((r) => r.responseId && paidIds.has(r.responseId)).map(keyOf));
      expect(paid.size, context).toBe(paidIds.size);
      for (const request of server.requests.slice(answeredBefore)) expect(paid.has(keyOf(request)), context).toBe(false);

      // No message was handled twice: each reached at most one finished turn of each agent.
      const events = readEvents(file, { effective: true });
      const finished = new Set(events.filter((e) => e.type === 'turn_ended').map((e) => `${e.agent}/${e.turn}`));
      const handled = new Map<string, number[]>();
      for (const e of events.filter((e) => e.type === 'turn_started' && finished.has(`${e.agent}/${e.turn}`))) {
        const seen = handled.get(String(e.agent)) ?? [];
        for (const id of e.messages as number[]) {
          expect(seen, `${context}: @${e.agent} handled #${id} twice`).not.toContain(id);
          seen.push(id);
        }
        handled.set(String(e.agent), seen);
      }
      await server.close();
    }
    console.log(`kill points (events in the file): ${resumedAfter.join(' ')} of ${total}`);
    // The kills landed at many different points of the run.
    expect(new Set(resumedAfter).size).toBeGreaterThanOrEqual(15);
  }, 240_000);
});
