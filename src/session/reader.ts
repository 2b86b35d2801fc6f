import { UsageError } from '../conclave-error.js';
import { readFileSync } from 'node:fs';
import { assertEvent, assertHeader, isKnownType } from './session-events.js';
import { FILE_EVENTS, SESSION_FORMAT, type SessionEvent, type SessionHeader } from './format.js';

/** The line an event was read from, kept on the event (JSON.stringify skips symbol keys). */
export const RAW_LINE = Symbol('raw line');

/** A session file that cannot be read as one; the message names the file and line. */
export class SessionFileError extends UsageError {}

export interface SessionRecord {
  path: string;
  header: SessionHeader;
  /** Every event in the file, in order (unknown types skipped). */
  events: SessionEvent[];
  /**
   * The events that make up the run's state: a `resumed` event voids what its run had recorded
   * after the point it replayed through (the stop, and anything after it).
   */
  effective: SessionEvent[];
  lastSeq: number;
  /** The file's size when it was read: a writer that finds another refuses to append. */
  bytes: number;
  /** An incomplete last line (a write cut short by a crash): where it starts, in bytes, and its text. */
  torn?: { byteOffset: number; text: string };
}

export function readSession(path: string): SessionRecord {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : (e as Error).message;
    throw new SessionFileError(`cannot read ${path}: ${why}`);
  }
  let torn: SessionRecord['torn'];
  let complete = text;
  const lastNewline = text.lastIndexOf('\n');
  if (lastNewline !== text.length - 1) {
    torn = { byteOffset: Buffer.byteLength(text.slice(0, lastNewline + 1)), text: text.slice(lastNewline + 1) };
    complete = text.slice(0, lastNewline + 1);
  }
  const lines = complete.split('\n');
  lines.pop();
  if (lines.length === 0) throw new SessionFileError(`${path}: the file is empty${torn ? ' but for an incomplete line' : ''}`);
  const parse = (line: string, n: number): Record<string, unknown> => {
    try {
      const value = JSON.parse(line) as unknown;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('not an object');
      return value as Record<string, unknown>;
    } catch {
      if (n === 1) throw new SessionFileError(`${path}:1: not a conclave session file (its first line is not a JSON header)`);
      throw new SessionFileError(`${path}:${n}: this line is not a valid session event (broken JSON in the middle of the file)`);
    }
  };
  const header = parse(lines[0]!, 1);
  if (header.type !== 'header') throw new SessionFileError(`${path}:1: the first line is not a session header; is this a conclave session file?`);
  if (typeof header.format !== 'number' || header.format > SESSION_FORMAT) {
    const by = typeof header.conclave_version === 'string' ? ` by conclave ${header.conclave_version}` : '';
    throw new SessionFileError(
      `${path}: written in session format ${JSON.stringify(header.format ?? null)}${by}; this conclave reads format ${SESSION_FORMAT} and older: upgrade ` +
        `conclave`,
    );
  }
  assertHeader<SessionHeader>(header, (problem) => new SessionFileError(`${path}:1: the session header is damaged: ${problem}`));
  const events: SessionEvent[] = [];
  let lastSeq = 0;
  for (let i = 1; i < lines.length; i++) {
    const event = parse(lines[i]!, i + 1);
    if (!Number.isSafeInteger(event.seq)) throw new SessionFileError(`${path}:${i + 1}: this event has no sequence number ("seq")`);
    if (event.seq !== lastSeq + 1) {
      throw new SessionFileError(`${path}:${i + 1}: the sequence jumps from ${lastSeq} to ${event.seq}; events are missing`);
    }
    lastSeq = event.seq as number;
    if (typeof event.type !== 'string') throw new SessionFileError(`${path}:${i + 1}: this event has no "type"`);
    if (!isKnownType(event.type)) continue;
    assertEvent<SessionEvent>(event, event.type, (problem) => new SessionFileError(`${path}:${i + 1}: a damaged ${event.type} event: ${problem}`));
    (event as Record<string | symbol, unknown>)[RAW_LINE] = lines[i]!;
    events.push(event);
  }
  return { path, header, events, effective: effectiveEvents(events), lastSeq, torn, bytes: Buffer.byteLength(text) };
}

function effectiveEvents(events: readonly SessionEvent[]): SessionEvent[] {
  const effective: SessionEvent[] = [];
  for (const event of events) {
    if (event.type === 'resumed') {
      const through = event.replayed_through;
      while (effective.length > 0 && effective[effective.length - 1]!.seq > through) effective.pop();
    } else if (!FILE_EVENTS.has(event.type)) {
      effective.push(event);
    }
  }
  return effective;
}
