import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSession } from '../../src/session/reader.js';
import { startFakeAnthropic } from '../fake-anthropic/server.js';
import { BIN, conclave } from '../helpers/cli.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';

const ROUNDS = 20;

describe('the session lock', () => {
  it(`${ROUNDS} rounds of kill -9 and then two resumes at once: exactly one runs, and the file stays valid`, async () => {
    const hanging = await startFakeAnthropic({ lead: () => ({ hang: true }) });
    const answering = await startFakeAnthropic({ lead: () => ({ text: 'done' }) });
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const dir = mkdtempSync(join(tmpdir(), 'conclave-lock-'));
        writeFileSync(join(dir, 'workflow.yml'), 'name: lock\nagents:\n  lead: { role: manager }\nkickoff: Go.\n');
        const asked = hanging.requests.length;
        const child = spawn(process.execPath, [BIN, 'run', 'workflow.yml', '--session', 's.jsonl', '--quiet'], {
          cwd: dir,
          env: { ...process.env, ANTHROPIC_BASE_URL: hanging.url, ANTHROPIC_API_KEY: TEST_API_KEY },
          stdio: 'ignore',
        });
        const closed = new Promise((resolve) => child.on('close', resolve));
        while (hanging.requests.length === asked) await new Promise((r) => setTimeout(r, 5));
        child.kill('SIGKILL');
        await closed;
        expect(existsSync(join(dir, 's.jsonl.lock')), 'kill -9 leaves the lock behind').toBe(true);

        const answered = answering.requests.length;
        const env = { ANTHROPIC_BASE_URL: answering.url, ANTHROPIC_API_KEY: TEST_API_KEY };
        const both = await Promise.all([
          conclave(['resume', 's.jsonl', '--quiet'], { cwd: dir, env }),
          conclave(['resume', 's.jsonl', '--quiet'], { cwd: dir, env }),
        ]);
        const codes = both.map((r) => r.code).sort();
        const context = `round ${round}: ${both.map((r) => `${r.code} ${r.stderr}`).join(' | ')}`;
        expect(codes, context).toEqual([0, 2]);
        expect(both.find((r) => r.code === 2)!.stderr, context).toMatch(
          /^conclave: .*s\.jsonl (is being written by another conclave|was written by another conclave while this one read it|records a run that already ended)/,
        );
        expect(answering.requests.length - answered, 'the model was asked once').toBe(1);
        const record = readSession(join(dir, 's.jsonl'));
        expect(record.events.filter((e) => e.type === 'resumed')).toHaveLength(1);
        expect(record.events.filter((e) => e.type === 'run_ended')).toHaveLength(1);
        expect(readdirSync(dir).filter((f) => f.includes('.lock'))).toEqual([]);
      }
    } finally {
      await hanging.close();
      await answering.close();
    }
  }, 120_000);
});
