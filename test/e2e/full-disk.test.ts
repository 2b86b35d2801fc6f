import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startFakeAnthropic } from '../fake-anthropic/server.js';
import { writeFileSync } from 'node:fs';
import { conclave } from '../helpers/cli.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';

/** A 48 KiB file system for the session, where the machine lets the test mount one (root). */
function smallDisk(dir: string): (() => void) | undefined {
  const mount = join(dir, 'small');
  mkdirSync(mount);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=48k', 'tmpfs', mount], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  return () => execFileSync('umount', [mount]);
}

describe('a full disk', () => {
  it('stops the run saying the session file cannot be written, with no stack trace', async (context) => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-full-'));
    const unmount = smallDisk(dir);
    if (!unmount) {
      process.stderr.write('\n*** SKIPPING the full-disk test: cannot mount a small tmpfs here (needs root) ***\n\n');
      return context.skip();
    }
    const server = await startFakeAnthropic({
      lead: () => ({ text: `@helper ${'x'.repeat(30_000)}` }),
      helper: () => ({ text: `@lead ${'y'.repeat(30_000)}` }),
    });
    try {
      writeFileSync(join(dir, 'workflow.yml'), 'name: full\nagents:\n  lead: { role: manager }\n  helper: { role: worker }\nkickoff: Go.\n');
      const run = await conclave(['run', 'workflow.yml', '--session', 'small/s.jsonl', '--json'], {
        cwd: dir,
        env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
      });
      expect(run.code, run.stderr).toBe(1);
      expect(JSON.parse(run.stdout).reason).toMatch(
        /^(@\w+ failed: )?cannot write the session file small\/s\.jsonl: the disk is full; free space, then continue the run with conclave resume small\/s\.jsonl$/,
      );
      expect(run.stderr).not.toMatch(/\n\s+at |internal error|holds this delivery/);
    } finally {
      await server.close();
      unmount();
    }
  });

  it("a spawned agent's turn that fails on it stops the run with the same sentence: no unhandled rejection, --json printed, the lock released", async (context) => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-full-'));
    const unmount = smallDisk(dir);
    if (!unmount) return context.skip();
    const server = await startFakeAnthropic({
      lead: (r) => (r.call === 1 ? { tools: [{ name: 'spawn', input: { template: 'helper', task: 'write a lot' } }] } : { text: 'waiting' }),
      'helper-1': () => ({ text: `@lead ${'y'.repeat(60_000)}` }),
    });
    try {
      writeFileSync(
        join(dir, 'workflow.yml'),
        'name: full\ntemplates:\n  helper: { role: worker, system: "You are a helper." }\nagents:\n  lead: { role: manager, spawns: [helper] }\nkickoff: Go.\n',
      );
      const run = await conclave(['run', 'workflow.yml', '--session', 'small/s.jsonl', '--json'], {
        cwd: dir,
        env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
      });
      expect(run.stderr).not.toMatch(/\n\s+at |internal error|Unhandled|unhandled/);
      expect(run.code, run.stderr).toBe(1);
      expect(JSON.parse(run.stdout).reason).toMatch(/cannot write the session file small\/s\.jsonl: the disk is full/);
      expect(existsSync(join(dir, 'small', 's.jsonl.lock'))).toBe(false);
    } finally {
      await server.close();
      unmount();
    }
  });
});
