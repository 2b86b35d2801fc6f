import { ConclaveError } from '../conclave-error.js';
import { closeSync, fsyncSync, mkdirSync, openSync, statSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { EventBody, SessionHeader } from './format.js';
import { lockSession, SessionLockedError } from './lock.js';
import type { Masker } from './masker.js';
import type { SessionRecord } from './reader.js';

/** The session file could not be written (a full disk): the run stops, saying so. */
export class SessionWriteError extends ConclaveError {}

/**
 * Appends a run's events to a JSONL file, one complete line each, numbered by `seq`, holding the
 * file's lock. Every secret value is masked in the line before it is written.
 */
export class SessionWriter {
  private failed: SessionWriteError | undefined;
  private closed = false;
  private syncScheduled = false;

  private constructor(
    private readonly fd: number,
    readonly path: string,
    /** The file's first line. */
    readonly header: SessionHeader,
    private readonly masker: Masker,
    private readonly release: () => void,
    private last: number,
  ) {}

  /** Creates the file (refusing one that exists) and writes its header. */
  static create(path: string, header: SessionHeader, masker: Masker): SessionWriter {
    mkdirSync(dirname(path), { recursive: true });
    const release = lockSession(path);
    try {
      const writer = new SessionWriter(openSync(path, 'wx'), path, header, masker, release, 0);
      // The header is never masked: its fields are the file's structure (secret inputs are "***" in it already).
      writeSync(writer.fd, `${JSON.stringify(header)}\n`);
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
  static append(record: SessionRecord, masker: Masker): SessionWriter {
    const release = lockSession(record.path);
    try {
      // Another conclave may have written it between our reading it and taking the lock.
      if (statSync(record.path).size !== record.bytes) {
        throw new SessionLockedError(`${record.path} was written by another conclave while this one read it; run the command again`);
      }
      let kept: string | undefined;
      if (record.torn) {
        kept = `${record.path}.torn-${Date.now()}`;
        writeFileSync(kept, record.torn.text);
        truncateSync(record.path, record.torn.byteOffset);
      }
      const writer = new SessionWriter(openSync(record.path, 'a'), record.path, record.header, masker, release, record.lastSeq);
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

  /** Writes the next event, stamped with the time it is written (what traces and the timeline are made from), `atMs` when given. */
  append(event: EventBody, atMs = Date.now()): number {
    this.writeLine({ seq: this.last + 1, ...event, at_ms: atMs });
    return ++this.last;
  }

  /** Makes what was written durable (at the end of the run). */
  sync(): void {
    this.io(() => fsyncSync(this.fd));
  }

  /**
   * Makes what was written durable once the turns ending now have all written (at turn ends): one
   * fsync for the 256 turns a fan-in ends together, not 256 on the run's one thread.
   */
  syncSoon(): void {
    if (this.syncScheduled || this.closed) return;
    this.syncScheduled = true;
    setImmediate(() => {
      this.syncScheduled = false;
      if (this.closed || this.failed) return;
      try {
        this.sync();
      } catch {
        // Said by the next write, which fails the same way.
      }
    });
  }

  close(): void {
    this.closed = true;
    try {
      if (!this.failed) this.sync();
    } finally {
      closeSync(this.fd);
      this.release();
    }
  }

  /** The line as it would be written: JSON whose string values have every secret masked. */
  lineOf(value: unknown): string {
    return this.masker.line(value);
  }

  private writeLine(value: unknown): void {
    const line = Buffer.from(`${this.lineOf(value)}\n`);
    this.io(() => {
      for (let written = 0; written < line.length; ) written += writeSync(this.fd, line, written);
    });
  }

  /** A write that fails (a full disk) fails every later one the same way, in a sentence. */
  private io(work: () => void): void {
    if (this.failed) throw this.failed;
    try {
      work();
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const why = code === 'ENOSPC' ? 'the disk is full' : code === 'EDQUOT' ? 'the disk quota is used up' : (e as Error).message;
      this.failed = new SessionWriteError(
        `cannot write the session file ${this.path}: ${why}; free space, then continue the run with conclave resume ${this.path}`,
      );
      throw this.failed;
    }
  }
}
