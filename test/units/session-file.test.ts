import { appendFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HEADER } from '../helpers/session-header.js';
import { SessionLockedError } from '../../src/session/lock.js';
import { Masker } from '../../src/session/masker.js';
import { RAW_LINE, readSession, SessionFileError } from '../../src/session/reader.js';
import { SessionWriter } from '../../src/session/writer.js';

const SECRET = 'hunter2-secret-value';
const path = () => join(mkdtempSync(join(tmpdir(), 'conclave-session-')), 's.jsonl');
const turnCounted = (agent: string) => ({ type: 'turn_counted' as const, agent });
const lines = (file: string) => readFileSync(file, 'utf8').trimEnd().split('\n');

function written(events = 3): string {
  const file = path();
  const writer = SessionWriter.create(file, HEADER, new Masker([SECRET]));
  for (let i = 0; i < events; i++) writer.append(turnCounted(`a${i}`));
  writer.close();
  return file;
}

describe('the session writer and reader', () => {
  it('write whole numbered lines, with secrets masked in values only, and read them back', () => {
    const file = path();
    const before = Date.now();
    const writer = SessionWriter.create(file, HEADER, new Masker([SECRET]));
    expect(writer.append({ type: 'setup_finished', id: SECRET, stdout: `key "${SECRET}" ok` })).toBe(1);
    expect(writer.append(turnCounted('lead'))).toBe(2);
    expect(writer.seq).toBe(2);
    writer.close();
    expect(readFileSync(file, 'utf8')).not.toContain(SECRET);
    const record = readSession(file);
    expect(record.header).toEqual(HEADER);
    const at = expect.any(Number);
    expect(JSON.parse(JSON.stringify(record.events))).toEqual([
      { seq: 1, type: 'setup_finished', id: '***', stdout: 'key "***" ok', at_ms: at },
      { seq: 2, type: 'turn_counted', agent: 'lead', at_ms: at },
    ]);
    // Each line carries the time it was written.
    expect(record.events.every((e) => e.at_ms! >= before && e.at_ms! <= Date.now())).toBe(true);
    expect(record.lastSeq).toBe(2);
    expect(record.torn).toBeUndefined();
    expect(record.bytes).toBe(readFileSync(file).length);
    expect((record.events[1] as unknown as Record<symbol, string>)[RAW_LINE]).toBe(lines(file)[2]);
    expect(existsLock(file)).toBe(false);
  });

  it('refuses to create a file that exists, and leaves it as it was', () => {
    const file = written();
    const before = readFileSync(file, 'utf8');
    expect(() => SessionWriter.create(file, HEADER, new Masker([]))).toThrow('EEXIST');
    expect(readFileSync(file, 'utf8')).toBe(before);
    expect(existsLock(file)).toBe(false);
  });

  it('refuses to append to a file that changed since it was read', () => {
    const file = written();
    const record = readSession(file);
    appendFileSync(file, `${JSON.stringify({ seq: 4, ...turnCounted('late') })}\n`);
    expect(() => SessionWriter.append(record, new Masker([]))).toThrow(SessionLockedError);
    expect(existsLock(file), 'the lock is released').toBe(false);
  });

  it('a torn last line is found, cut off, kept beside the file and recorded as a repair', () => {
    const file = written(2);
    const tornText = '{"seq":3,"type":"turn_coun';
    appendFileSync(file, tornText);
    const record = readSession(file);
    expect(record.torn).toEqual({ byteOffset: readFileSync(file).length - tornText.length, text: tornText });
    expect(record.lastSeq).toBe(2);
    const writer = SessionWriter.append(record, new Masker([]));
    writer.append(turnCounted('after'));
    writer.close();
    const repaired = readSession(file);
    expect(repaired.torn).toBeUndefined();
    const repair = repaired.events.find((e) => e.type === 'repair');
    expect(repair).toMatchObject({ seq: 3, torn_bytes: tornText.length });
    expect(readFileSync(String((repair as { kept: string }).kept), 'utf8')).toBe(tornText);
    expect(repaired.events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(repaired.effective.map((e) => e.type)).toEqual(['turn_counted', 'turn_counted', 'turn_counted']);
  });

  it('appending to a whole file adds no repair and keeps nothing aside', () => {
    const file = written(2);
    const writer = SessionWriter.append(readSession(file), new Masker([]));
    expect(writer.seq).toBe(2);
    writer.append(turnCounted('more'));
    writer.close();
    expect(readSession(file).events.map((e) => e.type)).toEqual(['turn_counted', 'turn_counted', 'turn_counted']);
    expect(readdirSync(dirname(file)).filter((f) => f.includes('.torn-'))).toEqual([]);
  });

  it('syncSoon, before and after close, leaves the file whole and throws nothing', async () => {
    const file = path();
    const writer = SessionWriter.create(file, HEADER, new Masker([]));
    writer.append(turnCounted('a'));
    writer.syncSoon();
    writer.syncSoon();
    await new Promise((r) => setImmediate(r));
    writer.append(turnCounted('b'));
    writer.syncSoon();
    writer.close(); // the sync scheduled above must not touch the closed descriptor
    await new Promise((r) => setImmediate(r));
    writer.syncSoon();
    await new Promise((r) => setImmediate(r));
    expect(readSession(file).events.map((e) => e.seq)).toEqual([1, 2]);
  });

  it('a resumed event voids what its run recorded after the point it replayed through', () => {
    const file = written(4);
    appendFileSync(file, `${JSON.stringify({ seq: 5, type: 'resumed', replayed_through: 2, at: 'now', conclave_version: '0.1.0' })}\n`);
    appendFileSync(file, `${JSON.stringify({ seq: 6, ...turnCounted('new') })}\n`);
    const record = readSession(file);
    expect(record.effective.map((e) => e.seq)).toEqual([1, 2, 6]);
    expect(record.events).toHaveLength(6);
  });

  it('skips event types it does not know, and keeps new fields', () => {
    const file = written(1);
    appendFileSync(file, `${JSON.stringify({ seq: 2, type: 'from_the_future', x: 1 })}\n${JSON.stringify({ seq: 3, ...turnCounted('b'), extra: true })}\n`);
    const record = readSession(file);
    expect(record.events.map((e) => e.type)).toEqual(['turn_counted', 'turn_counted']);
    expect(record.events[1]).toMatchObject({ extra: true });
    expect(record.lastSeq).toBe(3);
  });

  it.each([
    ['an empty file', '', 'the file is empty'],
    ['only a torn line', '{"type":"head', 'the file is empty but for an incomplete line'],
    ['not JSON', 'hello\n', ':1: not a conclave session file'],
    ['no header', '{"seq":1,"type":"turn_counted","agent":"a"}\n', ':1: the first line is not a session header'],
    [
      'a newer format',
      `${JSON.stringify({ ...HEADER, format: 2 })}\n`,
      'written in session format 2 by conclave 0.1.0; this conclave reads format 1 and older: upgrade conclave',
    ],
    [
      'a damaged header',
      `${JSON.stringify({ ...HEADER, workflow: { path: '', sha256: 'x' } })}\n`,
      ':1: the session header is damaged: "workflow.path" must be a non-empty string; found string ""',
    ],
    ['a broken line', `${JSON.stringify(HEADER)}\n{"seq":1,\n{"seq":2,"type":"turn_counted","agent":"a"}\n`, ':2: this line is not a valid session event'],
    ['no seq', `${JSON.stringify(HEADER)}\n{"type":"turn_counted","agent":"a"}\n`, ':2: this event has no sequence number'],
    ['a gap', `${JSON.stringify(HEADER)}\n{"seq":2,"type":"turn_counted","agent":"a"}\n`, ':2: the sequence jumps from 0 to 2; events are missing'],
    ['no type', `${JSON.stringify(HEADER)}\n{"seq":1}\n`, ':2: this event has no "type"'],
    [
      'a field of the wrong kind',
      `${JSON.stringify(HEADER)}\n{"seq":1,"type":"turn_started","agent":"a","turn":1,"through":1,"messages":[1,"x"]}\n`,
      ':2: a damaged turn_started event: "messages[1]" must be a whole number; found string "x"',
    ],
    [
      'a missing nested field',
      `${JSON.stringify(HEADER)}\n{"seq":1,"type":"message","message":{"id":1,"kind":"k","sender":"s","text":"t"}}\n`,
      '"message.recipients" must be a list; found nothing',
    ],
  ])('refuses %s, naming the file and line', (_, text, message) => {
    const file = path();
    writeFileSync(file, text);
    expect(() => readSession(file)).toThrow(SessionFileError);
    expect(() => readSession(file)).toThrow(message);
    expect(() => readSession(file)).toThrow(file);
  });

  it('names why a file cannot be read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-session-'));
    expect(() => readSession(join(dir, 'missing.jsonl'))).toThrow(`cannot read ${join(dir, 'missing.jsonl')}: no such file`);
    expect(() => readSession(dir)).toThrow('it is a directory');
  });
});

function existsLock(file: string): boolean {
  try {
    readFileSync(`${file}.lock`);
    return true;
  } catch {
    return false;
  }
}
