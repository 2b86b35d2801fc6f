import { readFileSync } from 'node:fs';

export interface Event {
  seq: number;
  type: string;
  [key: string]: unknown;
}

/** A session file's events (the header left out). `effective`: as a resume sees them, voided tails removed. */
export function readEvents(file: string, options: { effective?: boolean } = {}): Event[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const events: Event[] = [];
  for (const line of lines.slice(1)) {
    try {
      events.push(JSON.parse(line));
    } catch {
      // a torn last line, or the final newline
    }
  }
  if (!options.effective) return events;
  const effective: Event[] = [];
  for (const e of events) {
    if (e.type === 'resumed') while (effective.length && effective.at(-1)!.seq > Number(e.replayed_through)) effective.pop();
    else if (e.type !== 'repair') effective.push(e);
  }
  return effective;
}
