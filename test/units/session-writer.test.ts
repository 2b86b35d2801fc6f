import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { HEADER } from '../helpers/session-header.js';
import { Masker } from '../../src/session/masker.js';
import { readSession } from '../../src/session/reader.js';
import { SessionWriteError, SessionWriter } from '../../src/session/writer.js';

// What the writer asks of the disk, counted, and a disk that fails on demand (a full disk, a used
// quota): what no test can see through the CLI without a full disk or a power cut.
const disk = vi.hoisted(() => ({ fsyncs: 0, fail: undefined as string | undefined }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const failing =
    <A extends unknown[], R>(real: (...args: A) => R) =>
    (...args: A): R => {
      if (disk.fail) throw Object.assign(new Error(`${disk.fail}: the disk said no, write`), { code: disk.fail });
      return real(...args);
    };
  return {
    ...fs,
    writeSync: failing(fs.writeSync),
    fsyncSync: failing((fd: number) => {
      disk.fsyncs++;
      fs.fsyncSync(fd);
    }),
  };
});

const path = () => join(mkdtempSync(join(tmpdir(), 'conclave-writer-')), 's.jsonl');
const counted = (agent: string) => ({ type: 'turn_counted' as const, agent });
const tick = () => new Promise((resolve) => setImmediate(resolve));

beforeEach(() => {
  disk.fsyncs = 0;
  disk.fail = undefined;
});

describe('the session writer and the disk', () => {
  it('makes the header durable at once, and the turns that end together with one fsync, after they all wrote', async () => {
    const file = path();
    const writer = SessionWriter.create(file, HEADER, new Masker([]));
    expect(disk.fsyncs).toBe(1);
    for (const agent of ['a', 'b', 'c']) {
      writer.append(counted(agent));
      writer.syncSoon();
    }
    expect(disk.fsyncs, 'not before the turns ending now have all written').toBe(1);
    await tick();
    expect(disk.fsyncs).toBe(2);
    await tick();
    expect(disk.fsyncs, 'nothing more without a new syncSoon').toBe(2);
    writer.syncSoon();
    await tick();
    expect(disk.fsyncs, 'a later syncSoon syncs again').toBe(3);
    writer.close();
    expect(disk.fsyncs, 'close makes the rest durable').toBe(4);
    writer.syncSoon();
    await tick();
    expect(disk.fsyncs, 'nothing once closed').toBe(4);
    expect(readSession(file).events.map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it('a sync scheduled before close does not run after it', async () => {
    const writer = SessionWriter.create(path(), HEADER, new Masker([]));
    writer.append(counted('a'));
    writer.syncSoon();
    writer.close();
    const after = disk.fsyncs;
    await tick();
    expect(disk.fsyncs).toBe(after);
  });

  it.each([
    ['ENOSPC', 'the disk is full'],
    ['EDQUOT', 'the disk quota is used up'],
    ['EIO', 'EIO: the disk said no, write'],
  ])('a write that fails with %s fails every later one with the same sentence; close releases the lock and syncs nothing', async (code, why) => {
    const file = path();
    const writer = SessionWriter.create(file, HEADER, new Masker([]));
    writer.append(counted('a'));
    disk.fail = code;
    let first: unknown;
    try {
      writer.append(counted('b'));
    } catch (e) {
      first = e;
    }
    expect(first).toBeInstanceOf(SessionWriteError);
    expect((first as Error).message).toBe(`cannot write the session file ${file}: ${why}; free space, then continue the run with conclave resume ${file}`);
    disk.fail = undefined; // the disk has room again: the writer still refuses, so no line lands after a lost one
    expect(() => writer.append(counted('c'))).toThrow(first as Error);
    expect(() => writer.sync()).toThrow(first as Error);
    const syncs = disk.fsyncs;
    writer.syncSoon();
    await tick();
    expect(disk.fsyncs, 'a failed writer schedules no sync').toBe(syncs);
    writer.close();
    expect(disk.fsyncs, 'close syncs nothing after a failure').toBe(syncs);
    expect(existsSync(`${file}.lock`), 'the lock is released').toBe(false);
    expect(readSession(file).events.map((e) => e.seq)).toEqual([1]);
  });

  it('a sync that fails in syncSoon is said by the next write', async () => {
    const file = path();
    const writer = SessionWriter.create(file, HEADER, new Masker([]));
    writer.append(counted('a'));
    writer.syncSoon();
    disk.fail = 'ENOSPC';
    await tick();
    disk.fail = undefined;
    expect(() => writer.append(counted('b'))).toThrow('the disk is full');
    writer.close();
    expect(readFileSync(file, 'utf8')).not.toContain('"agent":"b"');
  });

  it('refuses a file another conclave wrote while this one read it, saying so', () => {
    const file = path();
    const writer = SessionWriter.create(file, HEADER, new Masker([]));
    writer.close();
    const record = readSession(file);
    const other = SessionWriter.append(record, new Masker([]));
    other.append(counted('other'));
    other.close();
    expect(() => SessionWriter.append(record, new Masker([]))).toThrow(`${file} was written by another conclave while this one read it; run the command again`);
  });
});
