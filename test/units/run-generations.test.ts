import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { closeStale } from '../../src/cli/action/stale-run.js';
import { generationOf, notedGeneration, noteGeneration, supersedes } from '../../src/cli/run-generations.js';
import { readSession, type SessionRecord } from '../../src/session/reader.js';

/** The generations noted beside a project's sessions (cli/run-generations.ts), and the stale close that notes one (cli/action/stale-run.ts), from source. */
const PARKED = join(import.meta.dirname, '..', 'fixtures', 'sessions', 'parked-for-people.jsonl');
const RUN = '20261128T012147Z-94a3d7';
let cwd: string;
beforeEach(() => {
  cwd = mkdtempSync(join(tmpdir(), 'conclave-generations-'));
});

const noteFile = () => join(cwd, '.conclave', 'runs', `${RUN}.json`);
const copy = (name: string, extra: string[] = []): string => {
  const file = join(cwd, name);
  copyFileSync(PARKED, file);
  if (extra.length) writeFileSync(file, `${readFileSync(file, 'utf8')}${extra.join('\n')}\n`);
  return file;
};
const resumedEvent = (seq: number) => JSON.stringify({ seq, type: 'resumed', replayed_through: 13, at: '2026-11-28T01:30:00Z', conclave_version: '0.1.0' });

describe('the noted generation of a run', () => {
  it('is written whole with the session made absolute, and read back', () => {
    noteGeneration(cwd, RUN, { generation: 2, status: 'waiting', session: 'x.jsonl' });
    expect(JSON.parse(readFileSync(noteFile(), 'utf8'))).toEqual({ generation: 2, status: 'waiting', session: resolve('x.jsonl') });
    expect(readFileSync(noteFile(), 'utf8').endsWith('}\n')).toBe(true);
    expect(notedGeneration(cwd, RUN)).toEqual({ generation: 2, status: 'waiting', session: resolve('x.jsonl') });
  });

  it('a newer generation replaces an older one, the same one replaces itself, an older one never replaces a newer', () => {
    noteGeneration(cwd, RUN, { generation: 2, status: 'waiting', session: 'a' });
    noteGeneration(cwd, RUN, { generation: 1, status: 'success', session: 'b' });
    expect(notedGeneration(cwd, RUN)).toMatchObject({ generation: 2, session: resolve('a') });
    noteGeneration(cwd, RUN, { generation: 2, status: 'stale', session: 'c' });
    expect(notedGeneration(cwd, RUN)).toMatchObject({ generation: 2, status: 'stale', session: resolve('c') });
    noteGeneration(cwd, RUN, { generation: 3, status: 'success', session: 'd' });
    expect(notedGeneration(cwd, RUN)).toMatchObject({ generation: 3, status: 'success' });
  });

  it('a run id that could name another file is neither written nor read', () => {
    mkdirSync(join(cwd, '.conclave', 'runs'), { recursive: true });
    for (const id of ['../escape', 'a/b', '', 'x'.repeat(101), 'run id']) {
      noteGeneration(cwd, id, { generation: 1, status: 'waiting', session: 's' });
      expect(notedGeneration(cwd, id)).toBeUndefined();
    }
    // Nothing was written, neither beside the notes nor above them.
    expect(readdirSync(join(cwd, '.conclave', 'runs'))).toEqual([]);
    expect(readdirSync(join(cwd, '.conclave'))).toEqual(['runs']);
    // A note a bad id would reach is not read either.
    writeFileSync(join(cwd, '.conclave', 'escape.json'), JSON.stringify({ generation: 1, status: 'waiting', session: '/s' }));
    writeFileSync(join(cwd, '.conclave', 'runs', '.json'), JSON.stringify({ generation: 1, status: 'waiting', session: '/s' }));
    expect(notedGeneration(cwd, '../escape')).toBeUndefined();
    expect(notedGeneration(cwd, '')).toBeUndefined();
    rmSync(join(cwd, '.conclave', 'runs', '.json'));
    noteGeneration(cwd, 'x'.repeat(100), { generation: 1, status: 'waiting', session: 's' });
    expect(notedGeneration(cwd, 'x'.repeat(100))).toMatchObject({ generation: 1 });
  });

  it('a note that is not one is ignored, field by field', () => {
    mkdirSync(join(cwd, '.conclave', 'runs'), { recursive: true });
    const good = { generation: 1, status: 'waiting', session: '/s' };
    for (const bad of ['not json', '{}', { ...good, generation: 1.5 }, { ...good, generation: '1' }, { ...good, status: 3 }, { ...good, session: null }]) {
      writeFileSync(noteFile(), typeof bad === 'string' ? bad : JSON.stringify(bad));
      expect(notedGeneration(cwd, RUN)).toBeUndefined();
    }
    writeFileSync(noteFile(), JSON.stringify(good));
    expect(notedGeneration(cwd, RUN)).toEqual(good);
  });

  it('a note that cannot be written is skipped without a throw', () => {
    if (process.getuid?.() === 0) return; // root writes anywhere; the read-only folder guards nothing then
    const locked = join(cwd, 'locked');
    mkdirSync(locked);
    chmodSync(locked, 0o500);
    expect(() => noteGeneration(locked, RUN, { generation: 1, status: 'waiting', session: 's' })).not.toThrow();
  });

  it('a file in the way of the folder: skipped without a throw', () => {
    writeFileSync(join(cwd, '.conclave'), 'a file');
    expect(() => noteGeneration(cwd, RUN, { generation: 1, status: 'waiting', session: 's' })).not.toThrow();
    expect(notedGeneration(cwd, RUN)).toBeUndefined();
  });

  it('a session is generation 1 and one more for each resume', () => {
    expect(generationOf(readSession(copy('g1.jsonl')))).toBe(1);
    expect(generationOf(readSession(copy('g3.jsonl', [resumedEvent(15), resumedEvent(16)])))).toBe(3);
  });
});

describe('an older copy of a run', () => {
  const record = (name: string, extra: string[] = []): SessionRecord => readSession(copy(name, extra));
  const note = (generation: number, status: string, session: string) => ({ generation, status, session: join(cwd, session) });

  it('is one when a newer generation was noted, never when an older one was', () => {
    const g2 = record('g2.jsonl', [resumedEvent(15)]);
    expect(supersedes(note(3, 'waiting', 'other.jsonl'), g2)).toBe(true);
    expect(supersedes(note(1, 'waiting', 'other.jsonl'), g2)).toBe(false);
    expect(supersedes(note(1, 'stale', 'other.jsonl'), g2)).toBe(false);
  });

  it('of the same generation: only when the run was closed as stale in another file, and the copy is not over', () => {
    const open = record('copy.jsonl');
    expect(supersedes(note(1, 'stale', 'closed.jsonl'), open)).toBe(true);
    expect(supersedes(note(1, 'stale', 'copy.jsonl'), open)).toBe(false);
    expect(supersedes(note(1, 'waiting', 'closed.jsonl'), open)).toBe(false);
    expect(supersedes(note(1, 'success', 'closed.jsonl'), open)).toBe(false);
    const finished = record('finished.jsonl', [
      JSON.stringify({ seq: 15, type: 'run_ended', status: 'stale', exit_code: 0, reason: 'r', summary: '', outputs: {} }),
    ]);
    expect(supersedes(note(1, 'stale', 'closed.jsonl'), finished)).toBe(false);
  });
});

describe('a stale close', () => {
  it("ends the session with run_ended stale, notes it as the run's generation, and says it in the step's summary", () => {
    const file = copy('parked.jsonl');
    const summary = join(cwd, 'summary.md');
    const saved = process.env.GITHUB_STEP_SUMMARY;
    process.env.GITHUB_STEP_SUMMARY = summary;
    try {
      closeStale(readSession(file), 'pull request #7 moved on to bbbb', file, cwd);
    } finally {
      if (saved === undefined) delete process.env.GITHUB_STEP_SUMMARY;
      else process.env.GITHUB_STEP_SUMMARY = saved;
    }
    const closed = readSession(file);
    // The session is closed and its lock released.
    expect(existsSync(`${file}.lock`)).toBe(false);
    expect(closed.events.at(-1)).toMatchObject({ seq: 15, type: 'run_ended', status: 'stale', exit_code: 0, reason: 'pull request #7 moved on to bbbb' });
    expect(notedGeneration(cwd, RUN)).toEqual({ generation: 1, status: 'stale', session: file });
    expect(readFileSync(summary, 'utf8')).toBe('### ⏹️ conclave: stale\n\npull request #7 moved on to bbbb\n');
    // The copy taken before the close is older now; the closed file itself is not.
    const before = readSession(copy('before.jsonl'));
    expect(supersedes(notedGeneration(cwd, RUN)!, before)).toBe(true);
    expect(supersedes(notedGeneration(cwd, RUN)!, closed)).toBe(false);
  });

  it('outside GitHub Actions writes no summary; a summary that cannot be written changes nothing', () => {
    const file = copy('parked.jsonl');
    const saved = process.env.GITHUB_STEP_SUMMARY;
    try {
      delete process.env.GITHUB_STEP_SUMMARY;
      closeStale(readSession(file), 'moved', file, cwd);
      expect(readSession(file).events.at(-1)).toMatchObject({ type: 'run_ended', status: 'stale' });
      const second = copy('second.jsonl');
      process.env.GITHUB_STEP_SUMMARY = join(cwd, 'no-such-folder', 'summary.md');
      expect(() => closeStale(readSession(second), 'moved', second, cwd)).not.toThrow();
      expect(readSession(second).events.at(-1)).toMatchObject({ type: 'run_ended', status: 'stale' });
    } finally {
      if (saved === undefined) delete process.env.GITHUB_STEP_SUMMARY;
      else process.env.GITHUB_STEP_SUMMARY = saved;
    }
  });
});
