import { closeSync, fsyncSync, mkdirSync, openSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { EventBody, SessionHeader } from './format.js';
import { lockSession } from './lock.js';
import type { SessionRecord } from './reader.js';

/**
 * Appends a run's events to a JSONL file, one complete line each, numbered by `seq`, holding the
 * file's lock. Every secret value is masked in the line before it is written.
 */
export class SessionWriter {
  private constructor(
    private readonly fd: number,
    readonly path: string,
    private readonly masks: readonly string[],
    private readonly release: () => void,
    private last: number,
  ) {}

  /** Creates the file (refusing one that exists) and writes its header. */
  static create(path: string, header: SessionHeader, secrets: readonly string[]): SessionWriter {
    mkdirSync(dirname(path), { recursive: true });
    const release = lockSession(path);
    try {
      const writer = new SessionWriter(openSync(path, 'wx'), path, masksOf(secrets), release, 0);
      writer.writeLine(header);
      writer.sync();
      return writer;
    } catch (e) {
      release();
      throw e;
    }
  }

  /**
   * Opens a recorded session to add to it. A torn last line (a write a crash cut short) is cut
   * off, kept beside the file, and recorded as a `repair` event.
   */
  static append(record: SessionRecord, secrets: readonly string[]): SessionWriter {
    const release = lockSession(record.path);
    try {
      let kept: string | undefined;
      if (record.torn) {
        kept = `${record.path}.torn-${Date.now()}`;
        writeFileSync(kept, record.torn.text);
        truncateSync(record.path, record.torn.byteOffset);
      }
      const writer = new SessionWriter(openSync(record.path, 'a'), record.path, masksOf(secrets), release, record.lastSeq);
      if (record.torn) writer.append({ type: 'repair', torn_bytes: Buffer.byteLength(record.torn.text), kept });
      return writer;
    } catch (e) {
      release();
      throw e;
    }
  }

  /** The sequence number of the last event written. */
  get seq(): number {
    return this.last;
  }

  append(event: EventBody): number {
    this.last++;
    this.writeLine({ seq: this.last, ...event });
    return this.last;
  }

  /** Makes what was written durable (at turn ends and at the end of the run). */
  sync(): void {
    fsyncSync(this.fd);
  }

  close(): void {
    this.sync();
    closeSync(this.fd);
    this.release();
  }

  /** The line as it would be written: JSON with every secret masked. */
  lineOf(value: unknown): string {
    return mask(JSON.stringify(value), this.masks);
  }

  private writeLine(value: unknown): void {
    writeSync(this.fd, `${this.lineOf(value)}\n`);
  }
}

/** A secret appears in a line as JSON text: mask that form of it, longest first. */
function masksOf(secrets: readonly string[]): string[] {
  return [...new Set(secrets.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length).map((s) => JSON.stringify(s).slice(1, -1));
}

function mask(line: string, masks: readonly string[]): string {
  for (const secret of masks) if (line.includes(secret)) line = line.split(secret).join('***');
  return line;
}
