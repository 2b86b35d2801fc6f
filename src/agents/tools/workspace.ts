import { closeSync, ftruncateSync, readSync, writeSync } from 'node:fs';
import { entriesOf, openChildDirectory, statChild, type OpenDir } from './descriptor-walk.js';
import { join } from 'node:path';
import { defineTool, input } from './define-tool.js';
import type { Workspace } from './workspace-root.js';

export const OUTPUT_CAP = 64 * 1024;
const LIST_CAP = 1000;
export const SKIPPED_DIRS = new Set(['.git', 'node_modules', '.conclave']);

export function cap(text: string, limit = OUTPUT_CAP): string {
  if (Buffer.byteLength(text) <= limit) return text;
  return `${Buffer.from(text).subarray(0, limit).toString('utf8')}\n[… cut at ${limit} bytes]`;
}

export const readFile = defineTool({
  name: 'read_file',
  description: 'Read a text file of the workspace.',
  readOnly: true,
  external: true,
  input: {
    path: input.string({ description: 'Relative to the workspace.' }),
    max_bytes: input.integer({ minimum: 1, description: `At most this many bytes (default and limit ${OUTPUT_CAP}).` }).optional(),
  },
  run: ({ path, max_bytes }, { workspace }) => {
    const limit = Math.max(1, Math.min(max_bytes ?? OUTPUT_CAP, OUTPUT_CAP));
    const { data, size } = readStart(workspace, path, limit);
    if (data.includes(0)) return { content: `${path} is a binary file of ${size} bytes` };
    return { content: `${data.toString('utf8')}${size > data.length ? `\n[… cut at ${data.length} bytes of ${size}]` : ''}` };
  },
});

/** At most the first `limit` bytes of a workspace file, through the tool boundary, and its size: memory follows the limit, not the file. */
export function readStart(workspace: Workspace, path: string, limit: number): { data: Buffer; size: number } {
  const file = workspace.openForReading(path);
  try {
    const data = Buffer.alloc(Math.min(limit, file.stats.size));
    let read = 0;
    for (let n = -1; n !== 0 && read < data.length; read += n) n = readSync(file.fd, data, read, data.length - read, read);
    return { data: data.subarray(0, read), size: file.stats.size };
  } finally {
    closeSync(file.fd);
  }
}

export const writeFile = defineTool({
  name: 'write_file',
  description: 'Create or overwrite a file of the workspace (parent directories are created).',
  readOnly: false,
  external: true,
  input: { path: input.string({ description: 'Relative to the workspace.' }), content: input.string() },
  run: ({ path, content: text }, { workspace }) => {
    const { bytes, full } = writeWhole(workspace, path, text);
    return { content: `wrote ${bytes} bytes to ${workspace.show(full)}` };
  },
});

/** Replaces a workspace file's content with `text` (created with its parents), through the tool boundary: its full path and size. */
export function writeWhole(workspace: Workspace, path: string, text: string): { full: string; bytes: number } {
  const content = Buffer.from(text);
  const file = workspace.openForWriting(path);
  try {
    ftruncateSync(file.fd, 0);
    for (let written = 0; written < content.length; ) written += writeSync(file.fd, content, written);
  } finally {
    closeSync(file.fd);
  }
  return { full: file.full, bytes: content.length };
}

export const listFiles = defineTool({
  name: 'list_files',
  description: `List a directory of the workspace (recursive skips ${[...SKIPPED_DIRS].join(' and ')}).`,
  readOnly: true,
  external: true,
  input: { path: input.string({ description: 'Default: the workspace root.' }).optional(), recursive: input.boolean().optional() },
  run: ({ path = '.', recursive }, { workspace }) => {
    const { full: start, stats } = workspace.existing(path);
    if (!stats.isDirectory()) return { content: `${workspace.show(start)} (${stats.size} bytes)` };
    const lines: string[] = [];
    // Below the start, by descriptor: a directory swapped for a link while this walks is never entered (descriptor-walk.ts).
    const visit = (dir: OpenDir) => {
      for (const entry of entriesOf(dir)) {
        if (lines.length >= LIST_CAP) return;
        const shown = workspace.show(join(dir.full, entry.name));
        if (entry.isDirectory()) {
          lines.push(`${shown}/`);
          const child = recursive && !SKIPPED_DIRS.has(entry.name) ? openChildDirectory(dir, entry.name) : undefined;
          if (child) walkClosing(child, visit);
        } else if (entry.isSymbolicLink()) {
          lines.push(`${shown} (link, not followed)`);
        } else if (entry.isFile()) {
          lines.push(`${shown} (${statChild(dir, entry.name)?.size ?? 0} bytes)`);
        } else {
          lines.push(`${shown} (not a regular file)`);
        }
      }
    };
    walkClosing(workspace.openDirectory(path), visit);
    if (lines.length >= LIST_CAP) lines.push(`[… stopped at ${LIST_CAP} entries]`);
    return { content: lines.join('\n') || '(empty)' };
  },
});

/** Visits an open directory, then closes it. */
function walkClosing(dir: OpenDir, visit: (dir: OpenDir) => void): void {
  try {
    visit(dir);
  } finally {
    closeSync(dir.fd);
  }
}
