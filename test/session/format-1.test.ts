import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSession } from '../../src/session/reader.js';
import { conclave, ROOT } from '../helpers/cli.js';

/**
 * Session files written in format 1 (test/fixtures/format-1, recorded with conclave 0.1.0 against
 * the test server): every later conclave must still read them. Do not re-record them; add a
 * format-2 folder beside them when the format changes.
 */
const FIXTURES = join(ROOT, 'test', 'fixtures', 'format-1');
const FILES = ['finished.jsonl', 'stopped.jsonl', 'resumed.jsonl', 'torn.jsonl'];

function copy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-format1-'));
  cpSync(FIXTURES, dir, { recursive: true });
  return dir;
}

describe('session format 1', () => {
  it.each(FILES)('%s is read, and shown in every format', async (file) => {
    const dir = copy();
    const record = readSession(join(dir, file));
    expect(record.header.format).toBe(1);
    expect(record.events.length).toBeGreaterThan(10);
    for (const format of ['text', 'markdown', 'json']) {
      const shown = await conclave(['show', file, '--format', format], { cwd: dir });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stderr).toBe('');
    }
  });

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
