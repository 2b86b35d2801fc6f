import { VOLATILE_FIELDS, type EventBody, type SessionEvent } from '../../session/format.js';
import { RAW_LINE } from '../../session/reader.js';
import { sameJson } from './same-json.js';

/**
 * How re-execution judges what it produced against the recording (engine/replay/journal.ts): whose doing
 * an event is, an event in words, whether two are the same event, and where they part.
 */

/** The agent whose doing an event is, or undefined for conclave's own (a system message, the run's start and end). */
export function ownerOf(event: SessionEvent): string | undefined {
  if ('agent' in event && typeof event.agent === 'string') return event.agent;
  switch (event.type) {
    case 'message':
      return event.message.kind === 'agent' ? event.message.sender : undefined;
    case 'proposal_opened':
      return event.proposal.proposer;
    case 'vote':
      return event.voter;
    case 'agent_spawned':
      return event.parent;
    case 'document_changed':
    case 'document_appended':
      return event.author;
    case 'edit_proposed':
      return event.edit.author;
    case 'edit_closed':
      return event.reviewer;
    default:
      return undefined;
  }
}

export function describeEvent(event: SessionEvent | undefined): string {
  if (!event) return 'the end of the recording';
  const who = 'agent' in event ? event.agent : event.type === 'message' ? event.message.sender : undefined;
  return `event #${event.seq} (${event.type}${who ? ` of @${who}` : ''})`;
}

/** Whether the run produced the recorded event: its line as it would be written equals the line read (volatile fields aside). */
export function sameEvent(recorded: SessionEvent, produced: EventBody, lineOf: (event: unknown) => string): boolean {
  const raw = (recorded as SessionEvent & { [RAW_LINE]?: string })[RAW_LINE];
  // The produced event takes the recorded values of the volatile fields, to compare the rest byte for byte.
  const recordedVolatile = Object.fromEntries(VOLATILE_FIELDS.filter((f) => f in recorded).map((f) => [f, (recorded as Record<string, unknown>)[f]]));
  if (raw !== undefined && lineOf({ seq: recorded.seq, ...produced, ...recordedVolatile }) === raw) return true;
  // The same JSON written another way (another tool's spacing or key order) is the same event.
  return sameJson(JSON.parse(lineOf(comparable(produced))), comparable(recorded));
}

function comparable(event: object): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...event };
  delete copy.seq;
  for (const field of VOLATILE_FIELDS) delete copy[field];
  return copy;
}

/** Where a run first produced something else than its recording: the event, the field, and the field's value in each. */
export interface Divergence {
  /** The recorded event's `seq`. */
  event: number;
  /** The first field that differs, as a dotted path (`request.system`, `request.messages.2.content.0.text`). */
  path: string;
  recorded: unknown;
  now: unknown;
}

/** Where the run and the recording part, in a sentence: the first field that differs, with both values. */
export function divergenceText(recorded: SessionEvent, at: Divergence): string {
  const diff =
    typeof at.recorded === 'string' && typeof at.now === 'string'
      ? stringDifference(at.recorded, at.now, at.path)
      : `${at.path || 'the event'}: recorded ${short(JSON.stringify(at.recorded))}, now ${short(JSON.stringify(at.now))}`;
  return `the run differs from the session at ${describeEvent(recorded)}: ${diff}`;
}

/** Where the run and the recording part: the first field that differs, with both values. */
export function divergenceAt(recorded: SessionEvent, produced: EventBody): Divergence {
  return { event: recorded.seq, ...firstDifference(comparable(recorded), comparable(produced), '') };
}

function firstDifference(a: unknown, b: unknown, path: string): Omit<Divergence, 'event'> {
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    for (const key of keys) {
      const x = (a as Record<string, unknown>)[key];
      const y = (b as Record<string, unknown>)[key];
      if (JSON.stringify(x) !== JSON.stringify(y)) return firstDifference(x, y, path ? `${path}.${key}` : key);
    }
  }
  return { path, recorded: a, now: b };
}

function stringDifference(a: string, b: string, path: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const from = Math.max(0, a.lastIndexOf('\n', i - 1) + 1, i - 60);
  const window = (s: string) => JSON.stringify(s.slice(from, i + 60));
  return `${path}: recorded …${window(a)}…, now …${window(b)}…`;
}

function short(text: string | undefined): string {
  if (text === undefined) return 'nothing';
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}
