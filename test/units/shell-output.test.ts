import { afterEach, describe, expect, it } from 'vitest';
import { runShell, type ShellOptions } from '../../src/agents/tools/shell.js';

const run = (command: string, more: Partial<ShellOptions> = {}) =>
  runShell({
    command,
    cwd: process.cwd(),
    env: { PATH: process.env.PATH },
    timeoutMs: 20_000,
    maxOutput: 1_000,
    signal: new AbortController().signal,
    ...more,
  });

const path = process.env.PATH;
afterEach(() => {
  process.env.PATH = path;
});

describe('a command whose output passes its cap', () => {
  it('keeps the cap, counts every byte past it (counted by wc, not read by Node), and keeps the exit code and the other stream', async () => {
    const result = await run('head -c 3000000 /dev/zero | tr "\\0" x; printf "%s" "the end" >&2; exit 3');
    expect(result.code).toBe(3);
    expect(result.stdout).toBe('x'.repeat(1_000));
    expect(result.stdoutBytes).toBe(3_000_000);
    expect(result.stderr).toBe('the end');
    expect(result.stderrBytes).toBe(7);
  });

  it('both streams past the cap at once', async () => {
    const result = await run('head -c 500000 /dev/zero >&2 & head -c 700000 /dev/zero; wait');
    expect(result.stdoutBytes).toBe(700_000);
    expect(result.stderrBytes).toBe(500_000);
    expect(result.stdout).toHaveLength(1_000);
  });

  it('without wc on the PATH, Node drains and counts it itself', async () => {
    process.env.PATH = '/nonexistent';
    const result = await run('/usr/bin/head -c 2000000 /dev/zero', { env: { PATH: path } });
    expect(result.code).toBe(0);
    expect(result.stdoutBytes).toBe(2_000_000);
  });

  it('a process that escapes the group and holds the pipe: the result comes within a second, with what was counted', async () => {
    const started = Date.now();
    const result = await run('setsid sleep 3 & head -c 200000 /dev/zero');
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(result.code).toBe(0);
    expect(result.stdoutBytes).toBeGreaterThanOrEqual(1_000);
    expect(result.stdout).toHaveLength(1_000);
  });

  it('a timeout kills the command and still says how much it printed', async () => {
    const result = await run('yes', { timeoutMs: 500 });
    expect(result.timedOut).toBe(true);
    expect(result.stdoutBytes).toBeGreaterThan(1_000);
    expect(result.stdout.startsWith('y\ny\n')).toBe(true);
  });
});
