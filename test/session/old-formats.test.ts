import { cpSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SESSION_FORMAT } from '../../src/session/format.js';
import { readSession } from '../../src/session/reader.js';
import { conclave, ROOT } from '../helpers/cli.js';

/**
 * Session files of every format conclave has written (test/fixtures/session/format-N, each
 * recorded by the conclave of its time against the test server): every later conclave must still
 * read them. Never re-record them; when the format changes, add a format-N folder beside them
 * (docs/session-format.md: compatibility).
 */
const ALL = join(ROOT, 'test', 'fixtures', 'session');
const FIXTURES = join(ALL, 'format-1');
const FORMATS = readdirSync(ALL).filter((d) => /^format-\d+$/.test(d));
const FILES = FORMATS.flatMap((format) =>
  readdirSync(join(ALL, format))
    .filter((f) => f.endsWith('.jsonl'))
    .map((file) => ({ format, file })),
);

function copy(format = 'format-1'): string {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-format-'));
  cpSync(join(ALL, format), dir, { recursive: true });
  return dir;
}

it('keeps a folder for every format up to this one', () => {
  expect(FORMATS.sort()).toEqual(Array.from({ length: SESSION_FORMAT }, (_, i) => `format-${i + 1}`));
});

describe.each(FILES)('$format/$file', ({ format, file }) => {
  it('is read, and shown in every format', async () => {
    const dir = copy(format);
    const record = readSession(join(dir, file));
    expect(record.header.format).toBe(Number(format.slice('format-'.length)));
    expect(record.events.length).toBeGreaterThan(10);
    for (const shape of ['text', 'markdown', 'json']) {
      const shown = await conclave(['show', file, '--format', shape], { cwd: dir });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stderr).toBe('');
    }
  });
});

describe('session format 1', () => {
  it('keeps a resume and its raised limit: resumed.jsonl voids the stop it replaced', () => {
    const record = readSession(join(FIXTURES, 'resumed.jsonl'));
    const types = record.effective.map((e) => e.type);
    expect(types.filter((t) => t === 'run_ended')).toHaveLength(1);
    expect(record.effective.find((e) => e.type === 'limits_changed')).toMatchObject({ changed: ['maxTurns'], limits: { maxTurns: 5 } });
  });

  it('refuses to resume a finished run, and finds a torn last line', async () => {
    const dir = copy();
    const again = await conclave(['resume', 'finished.jsonl'], { cwd: dir, env: { ANTHROPIC_API_KEY: 'sk-ant-test-0123456789abcdef' } });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('records a run that already ended (success');
    expect(readSession(join(dir, 'torn.jsonl')).torn?.text).toBe('{"seq":999,"type":"mess');
  });
});
