// The grep tool's search, in a worker thread that the tool terminates at its deadline: a regular
// expression that backtracks cannot block conclave's event loop (docs/design.md: the tool boundary). Bundled on its own.
import { closeSync, constants, fstatSync, readSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { entriesOf, openChild, openChildDirectory, openParents, type OpenDir } from './descriptor-walk.js';

export interface GrepJob {
  root: string;
  /** The start's steps below the root, opened one inside the other (descriptor-walk.ts): no link is followed, now or while it walks. */
  steps: string[];
  pattern: string;
  ignoreCase: boolean;
  maxMatches: number;
  skipped: string[];
  /** Files holding credentials (full real paths): never searched. */
  secret: string[];
}

const CHUNK = 64 * 1024;
/** A longer line is searched only up to here: memory follows this, not the file. */
const MAX_LINE = 1024 * 1024;

const job = workerData as GrepJob;
const regex = new RegExp(job.pattern, job.ignoreCase ? 'i' : '');
let found = 0;
let batch: string[] = [];

function flush(): void {
  if (batch.length > 0) parentPort!.postMessage({ type: 'matches', lines: batch });
  batch = [];
}

function match(full: string, n: number, line: string): void {
  if (found >= job.maxMatches || !regex.test(line)) return;
  found++;
  batch.push(`${relative(job.root, full) || '.'}:${n}: ${line.slice(0, 300)}`);
  if (batch.length >= 20) flush();
}

/** Searches one regular file of `dir`, reading it in chunks; binary files (a NUL in the first chunk) are skipped. */
function search(dir: OpenDir, name: string): void {
  const full = join(dir.full, name);
  if (job.secret.includes(full)) return;
  const fd = openChild(dir, name, constants.O_RDONLY);
  if (fd === undefined) return;
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() || stats.nlink > 1) return;
    const buffer = Buffer.alloc(CHUNK);
    let line = '';
    let n = 1;
    let first = true;
    for (;;) {
      const read = readSync(fd, buffer, 0, CHUNK, null);
      if (read === 0) break;
      const chunk = buffer.subarray(0, read);
      if (first && chunk.includes(0)) return;
      first = false;
      const parts = chunk.toString('utf8').split('\n');
      for (let i = 0; i < parts.length - 1; i++) {
        match(full, n++, (line + parts[i]).slice(0, MAX_LINE));
        line = '';
        if (found >= job.maxMatches) return;
      }
      line = (line + parts.at(-1)).slice(0, MAX_LINE);
    }
    if (line !== '') match(full, n, line);
  } finally {
    closeSync(fd);
  }
}

function visit(dir: OpenDir): void {
  try {
    for (const entry of entriesOf(dir)) {
      if (found >= job.maxMatches) return;
      if (entry.isDirectory() && !job.skipped.includes(entry.name)) {
        const child = openChildDirectory(dir, entry.name);
        if (child) visit(child);
      } else if (entry.isFile()) {
        search(dir, entry.name);
        flush(); // what was found so far survives a deadline in the next file
      }
    }
  } finally {
    closeSync(dir.fd);
  }
}

// The start is a directory, or a file searched through its directory's descriptor.
const last = job.steps.at(-1);
const parent = openParents(job.root, job.steps.join('/') || '.', job.steps, false);
const start = last === undefined ? parent : openChildDirectory(parent, last);
if (start === parent) visit(parent);
else if (start) {
  closeSync(parent.fd);
  visit(start);
} else {
  try {
    search(parent, last!);
  } finally {
    closeSync(parent.fd);
  }
}
flush();
parentPort!.postMessage({ type: 'done', limited: found >= job.maxMatches });
