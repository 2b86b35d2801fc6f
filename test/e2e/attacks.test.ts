import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { attack, fresh, PEAK_KB, workflow } from '../helpers/attack.js';
import { sandboxForTests } from '../helpers/sandbox.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';

/**
 * The attack corpus of DESIGN §8: tool calls a hostile model could make, driven through the CLI.
 * Each asserts the outcome, a bound on the wall time, and a bound on conclave's peak memory
 * (VmHWM of the conclave process, read from /proc while it runs).
 */

describe('the attack corpus: paths', () => {
  it('a dangling symlink, a link to a directory outside, a hard link, a FIFO, a device, and odd paths are refused', async () => {
    const outside = fresh('outside');
    writeFileSync(join(outside, 'secret.txt'), 'top secret');
    const dir = fresh('workspace');
    symlinkSync(join(outside, 'created-by-attack.txt'), join(dir, 'dangling'));
    symlinkSync(outside, join(dir, 'out'));
    linkSync(join(outside, 'secret.txt'), join(dir, 'hard.txt'));
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    let device = true;
    try {
      execFileSync('mknod', [join(dir, 'null'), 'c', '1', '3'], { stdio: 'ignore' });
    } catch {
      device = false; // not root: no device node can be made here
    }
    const r = await attack(
      dir,
      [
        { name: 'write_file', input: { path: 'dangling', content: 'planted' } },
        { name: 'write_file', input: { path: 'out/planted.txt', content: 'planted' } },
        { name: 'read_file', input: { path: 'hard.txt' } },
        { name: 'write_file', input: { path: 'hard.txt', content: 'overwritten' } },
        { name: 'read_file', input: { path: 'fifo' } },
        { name: 'write_file', input: { path: 'fifo', content: 'x' } },
        { name: 'read_file', input: { path: device ? 'null' : 'fifo' } },
        { name: 'read_file', input: { path: 'a\u0000b' } },
        { name: 'read_file', input: { path: '../secret.txt' } },
        { name: 'list_files', input: { path: '/etc' } },
        { name: 'grep', input: { pattern: 'secret', path: 'out' } },
      ],
      workflow('read_file, write_file, list_files, grep', 'limits: { timeout: 20s }'),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.results.map((x) => [x.is_error ?? false, x.content])).toEqual([
      [true, 'dangling is a symbolic link; the workspace tools do not follow links'],
      [true, 'out/planted.txt: out is a symbolic link; the workspace tools do not follow links'],
      [true, 'hard.txt has 2 hard links, which may reach outside the workspace; refused'],
      [true, 'hard.txt has 2 hard links, which may reach outside the workspace; refused'],
      [true, 'fifo is not a regular file or directory (a FIFO, socket or device); refused'],
      [true, 'fifo is not a regular file or directory (a FIFO, socket or device); refused'],
      [true, `${device ? 'null' : 'fifo'} is not a regular file or directory (a FIFO, socket or device); refused`],
      [true, 'the path contains a NUL character'],
      [true, '../secret.txt: paths may not contain ".."'],
      [true, '/etc: absolute paths are not allowed; give a path relative to the workspace'],
      [true, 'out is a symbolic link; the workspace tools do not follow links'],
    ]);
    expect(readdirSync(outside)).toEqual(['secret.txt']);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('top secret');
    expect(r.ms).toBeLessThan(10_000);
    expect(r.peakKb).toBeLessThan(PEAK_KB);
  });

  it('a directory swapped for a link while the model writes never lets a write out', async () => {
    const outside = fresh('outside');
    const dir = fresh('workspace');
    mkdirSync(join(dir, 'sub'));
    // Swaps sub between a real directory and a link to outside, as fast as it can.
    const swapper = spawn(
      'sh',
      ['-c', `cd '${dir}'; while :; do mv sub sub.d 2>/dev/null; ln -s '${outside}' sub 2>/dev/null; rm -f sub; mv sub.d sub 2>/dev/null; done`],
      { stdio: 'ignore' },
    );
    const calls = Array.from({ length: 60 }, (_, i) => ({ name: 'write_file', input: { path: `sub/f${i}.txt`, content: 'planted' } }));
    const r = await attack(dir, calls, workflow('write_file'));
    swapper.kill('SIGKILL');
    expect(r.code, r.stderr).toBe(0);
    expect(readdirSync(outside)).toEqual([]);
    expect(r.results).toHaveLength(60);
    expect(r.ms).toBeLessThan(15_000);
    expect(r.peakKb).toBeLessThan(PEAK_KB);
  });
});

describe('the attack corpus: reading and searching', () => {
  it('reads 10 bytes of a 1.5 GB file, reading only those', async () => {
    const dir = fresh('workspace');
    const fd = openSync(join(dir, 'big.txt'), 'w');
    writeSync(fd, 'hello world, and then a lot more');
    closeSync(fd);
    execFileSync('truncate', ['-s', '1500M', join(dir, 'big.txt')]);
    const r = await attack(dir, [{ name: 'read_file', input: { path: 'big.txt', max_bytes: 10 } }], workflow('read_file'));
    expect(r.results[0]!.content).toBe('hello worl\n[… cut at 10 bytes of 1572864000]');
    expect(r.ms).toBeLessThan(10_000);
    expect(r.peakKb).toBeLessThan(PEAK_KB);
  });

  it('a backtracking pattern stops at the run timeout, not after it', async () => {
    const dir = fresh('workspace');
    writeFileSync(join(dir, 'a.txt'), `${'a'.repeat(41)}b\n`);
    const r = await attack(dir, [{ name: 'grep', input: { pattern: '^(a+)+$' } }], workflow('grep', 'limits: { timeout: 3s }'));
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout).reason).toBe('limit reached: timeout (3s)');
    expect(r.ms).toBeLessThan(8_000);
    expect(r.peakKb).toBeLessThan(PEAK_KB);
  });

  it('a backtracking pattern over a 10 MB file returns at its 10 s deadline with what it found', async () => {
    const dir = fresh('workspace');
    writeFileSync(join(dir, 'first.txt'), 'x=1\n');
    writeFileSync(join(dir, 'zbig.txt'), `${'x'.repeat(10 * 1024 * 1024)}\n`);
    const r = await attack(dir, [{ name: 'grep', input: { pattern: '.*.*=' } }], workflow('grep', 'limits: { timeout: 60s }'));
    expect(r.code, r.stderr).toBe(0);
    expect(r.results[0]!.content).toBe('first.txt:1: x=1\n[… stopped after 10 s: the pattern or the files take too long; these are the matches found before]');
    expect(r.ms).toBeLessThan(16_000);
    expect(r.peakKb).toBeLessThan(PEAK_KB);
  }, 30_000);
});

describe('the attack corpus: commands', () => {
  it('yes, a grandchild that outlives sh, and 600 MB of output: bounded in time and memory', async () => {
    const dir = fresh('workspace');
    const marker = `sleep 31.${process.pid}`;
    const r = await attack(
      dir,
      [
        { name: 'run_command', input: { command: 'yes', timeout_seconds: 2 } },
        { name: 'run_command', input: { command: `(${marker} &) ; echo started` } },
        { name: 'run_command', input: { command: "head -c 600000000 /dev/zero | tr '\\0' x" } },
      ],
      workflow('run_command', 'sandbox: off'),
    );
    expect(r.code, r.stderr).toBe(0);
    const [yes, grandchild, flood] = r.results.map((x) => x.content);
    expect(yes).toMatch(/^killed: timed out after 2 s\n--- stdout ---\ny\ny\n/);
    expect(yes).toMatch(/\[… cut at 65536 bytes of \d+\]/);
    expect(grandchild).toMatch(/^exit code 0\n--- stdout ---\nstarted\n/);
    expect(flood).toContain('[… cut at 65536 bytes of 600000000]');
    expect(execFileSync('ps', ['-eo', 'args']).toString()).not.toContain(marker);
    expect(r.ms).toBeLessThan(25_000);
    expect(r.peakKb).toBeLessThan(PEAK_KB);
  }, 40_000);

  it('SIGTERM while a command sleeps ends the run at once (well within the 47 s it would sleep), the command with it', async () => {
    const dir = fresh('workspace');
    let pid = 0;
    const marker = `sleep 47.${process.pid}`;
    const running = attack(dir, [{ name: 'run_command', input: { command: marker } }], workflow('run_command', 'sandbox: off'), { onStart: (p) => (pid = p) });
    while (!execFileSync('ps', ['-eo', 'args']).toString().includes(marker)) await new Promise((r) => setTimeout(r, 20));
    const signalled = Date.now();
    process.kill(pid, 'SIGTERM');
    const r = await running;
    expect(r.code).toBe(143);
    expect(Date.now() - signalled, 'a bound for a loaded machine: the command would run 47 s').toBeLessThan(10_000);
    expect(r.peakKb).toBeLessThan(PEAK_KB);
    expect(execFileSync('ps', ['-eo', 'args']).toString()).not.toContain(marker);
  });

  it('env printed by run_command holds the minimal environment, env: and tools_env, never the key or other secrets', async () => {
    const dir = fresh('workspace');
    const r = await attack(
      dir,
      [{ name: 'run_command', input: { command: 'env' } }],
      workflow('run_command', 'sandbox: off\nenv: { FROM_WORKFLOW: yes }\ntools_env: [EXTRA_VISIBLE]'),
      { env: { MY_SERVICE_TOKEN: 'hunter2-secret-value', EXTRA_VISIBLE: 'shown', OTHER_VAR: 'hidden' } },
    );
    const env = r.results[0]!.content;
    expect(env).toContain('FROM_WORKFLOW=yes');
    expect(env).toContain('EXTRA_VISIBLE=shown');
    expect(env).toMatch(/^PATH=/m);
    for (const hidden of [TEST_API_KEY, 'ANTHROPIC_', 'hunter2-secret-value', 'OTHER_VAR']) expect(env).not.toContain(hidden);
    expect(r.ms).toBeLessThan(10_000);
    expect(r.peakKb).toBeLessThan(PEAK_KB);
  });
});

const bwrap = sandboxForTests();

describe.skipIf(!bwrap.bwrap)('the attack corpus: the sandbox (bubblewrap)', () => {
  it('run_command reaches no network and writes nothing outside the workspace, unless network: true', async () => {
    const http = createServer((_, res) => res.end('reached'));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const { port } = http.address() as AddressInfo;
    const probe = `node -e "fetch('http://127.0.0.1:${port}').then(r => r.text()).then(t => console.log('net:', t), () => console.log('net: blocked'))"`;
    const home = process.env.HOME ?? '/root';
    const marker = `conclave-sandbox-${process.pid}`;
    try {
      const dir = fresh('workspace');
      const closed = await attack(
        dir,
        [
          {
            name: 'run_command',
            input: {
              command: `${probe}; echo inside > in.txt; echo x > ${home}/${marker} || echo home: refused; echo t > /tmp/${marker} && echo tmp: private`,
            },
          },
        ],
        workflow('run_command', 'sandbox: required'),
      );
      const out = closed.results[0]!.content;
      expect(out).toContain('net: blocked');
      expect(out).toContain('home: refused');
      expect(out).toContain('tmp: private');
      expect(readFileSync(join(dir, 'in.txt'), 'utf8')).toBe('inside\n');
      expect(existsSync(join(home, marker))).toBe(false);
      expect(existsSync(join('/tmp', marker))).toBe(false);

      expect(closed.ms).toBeLessThan(15_000);
      expect(closed.peakKb).toBeLessThan(PEAK_KB);
      const open = await attack(
        fresh('workspace'),
        [{ name: 'run_command', input: { command: probe } }],
        workflow('run_command', 'sandbox: { network: true }'),
      );
      expect(open.results[0]!.content).toContain('net: reached');
    } finally {
      http.close();
    }
  });
});
