import { closeSync, fsyncSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export const SESSION_FORMAT = 1;

/** The first line of a session file. */
export interface SessionHeader {
  type: 'header';
  format: number;
  run_id: string;
  conclave_version: string;
  workflow: { path: string; sha256: string };
  inputs: Record<string, unknown>;
  started_at: string;
}

/**
 * Appends a run's events to a JSONL file, one complete line each, numbered by `seq`. Every
 * secret value is masked in the line before it is written.
 */
export class SessionWriter {
  private seq = 0;

  private constructor(
    private readonly fd: number,
    readonly path: string,
    private readonly masks: readonly [string, string][],
  ) {}

  /** Creates the file (refusing one that exists) and writes its header. */
  static create(path: string, header: SessionHeader, secrets: readonly string[]): SessionWriter {
    mkdirSync(dirname(path), { recursive: true });
    const fd = openSync(path, 'wx');
    // A secret appears in a line as JSON text: mask that form of it.
    const masks = [...new Set(secrets.filter((s) => s.length > 0))]
      .sort((a, b) => b.length - a.length)
      .map((s) => [JSON.stringify(s).slice(1, -1), '***'] as [string, string]);
    const writer = new SessionWriter(fd, path, masks);
    writer.writeLine(header);
    return writer;
  }

  append(event: { type: string } & Record<string, unknown>): number {
    this.seq++;
    this.writeLine({ seq: this.seq, ...event });
    return this.seq;
  }

  /** Makes what was written durable (at turn ends and at the end of the run). */
  sync(): void {
    fsyncSync(this.fd);
  }

  close(): void {
    this.sync();
    closeSync(this.fd);
  }

  private writeLine(value: unknown): void {
    let line = JSON.stringify(value);
    for (const [secret, mask] of this.masks) line = line.split(secret).join(mask);
    writeSync(this.fd, `${line}\n`);
  }
}
