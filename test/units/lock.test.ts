import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lockSession, SessionLockedError, takeOver } from '../../src/session/lock.js';

const session = () => join(mkdtempSync(join(tmpdir(), 'conclave-lock-')), 'run.jsonl');
const children: { kill(): void }[] = [];
afterEach(() => children.splice(0).forEach((c) => c.kill()));

/** A pid that is alive for the test (a sleeping child), and one that is not. */
function livePid(): number {
  const child = spawn('sleep', ['30']);
  children.push(child);
  return child.pid!;
}
const DEAD = 2 ** 22 + 12_345; // above Linux's default pid_max: never a live process

describe('the session lock', () => {
  it('is created naming this process, and released', () => {
    const path = session();
    const release = lockSession(path);
    expect(readFileSync(`${path}.lock`, 'utf8')).toBe(String(process.pid));
    release();
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('is refused while a live process holds it, naming that process', () => {
    const path = session();
    const pid = livePid();
    writeFileSync(`${path}.lock`, String(pid));
    expect(() => lockSession(path)).toThrow(SessionLockedError);
    try {
      lockSession(path);
    } catch (e) {
      expect((e as SessionLockedError).exitCode, 'a usage error: exit 2').toBe(2);
    }
    expect(() => lockSession(path)).toThrow(`${path} is being written by another conclave (process ${pid}); wait for it to end, or stop it`);
    expect(readFileSync(`${path}.lock`, 'utf8')).toBe(String(pid));
  });

  it.each([
    ['a dead process', String(DEAD)],
    ['no pid at all', 'garbage'],
    ['an empty file', ''],
    ['pid 0', '0'],
    ['a negative pid', '-5'],
    ['this very process (a lock left by an earlier run in the same process)', String(process.pid)],
  ])('left by %s is taken over, and the takeover file is gone after', (_, content) => {
    const path = session();
    writeFileSync(`${path}.lock`, content);
    const release = lockSession(path);
    expect(readFileSync(`${path}.lock`, 'utf8')).toBe(String(process.pid));
    expect(existsSync(`${path}.lock.takeover`)).toBe(false);
    release();
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('a release does not remove a lock another process holds now', () => {
    const path = session();
    const release = lockSession(path);
    writeFileSync(`${path}.lock`, '424242');
    release();
    expect(readFileSync(`${path}.lock`, 'utf8')).toBe('424242');
  });

  it('takes over only the lock of the dead process it saw: if another took it over meanwhile, it backs off', () => {
    const path = session();
    const lock = `${path}.lock`;
    const other = livePid();
    writeFileSync(lock, String(other)); // another conclave took the dead one's lock over first
    expect(takeOver(lock, DEAD, String(process.pid))).toBe(false);
    expect(readFileSync(lock, 'utf8')).toBe(String(other));
    expect(existsSync(`${lock}.takeover`)).toBe(false);
    writeFileSync(lock, String(DEAD));
    expect(takeOver(lock, DEAD, String(process.pid))).toBe(true);
    expect(readFileSync(lock, 'utf8')).toBe(String(process.pid));
  });

  it('waits out a takeover in progress, and voids one left by a process killed while taking over', () => {
    const path = session();
    const lock = `${path}.lock`;
    writeFileSync(lock, String(DEAD));
    writeFileSync(`${lock}.takeover`, '1');
    expect(takeOver(lock, DEAD, String(process.pid))).toBe(false);
    expect(existsSync(`${lock}.takeover`), 'a fresh takeover is left to its process').toBe(true);
    expect(() => lockSession(path)).toThrow(SessionLockedError);
    const old = (Date.now() - 11_000) / 1000;
    utimesSync(`${lock}.takeover`, old, old);
    const release = lockSession(path);
    expect(readFileSync(lock, 'utf8')).toBe(String(process.pid));
    release();
  });
});
