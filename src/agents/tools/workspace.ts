import { closeSync, ftruncateSync, lstatSync, readdirSync, readSync, writeSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { numberArg, stringArg, ToolInputError, type AgentTool, type ToolContext, type ToolResult } from './tool.js';

export const OUTPUT_CAP = 64 * 1024;
const LIST_CAP = 1000;
export const SKIPPED_DIRS = new Set(['.git', 'node_modules', '.conclave']);

/** Runs a workspace tool; bad input and refused paths come back as tool errors. */
export function guarded(run: (input: Record<string, unknown>, context: ToolContext) => ToolResult | Promise<ToolResult>) {
  return async (input: Record<string, unknown>, context: ToolContext): Promise<ToolResult> => {
    try {
      return await run(input, context);
    } catch (e) {
      if (e instanceof ToolInputError) return { content: e.message, isError: true };
      const code = (e as NodeJS.ErrnoException).code;
      if (code) return { content: `${code}: ${(e as Error).message}`, isError: true };
      throw e;
    }
  };
}

export function cap(text: string, limit = OUTPUT_CAP): string {
  if (Buffer.byteLength(text) <= limit) return text;
  return `${Buffer.from(text).subarray(0, limit).toString('utf8')}\n[… cut at ${limit} bytes]`;
}

export const readFile: AgentTool = {
  readOnly: true,
  external: true,
  definition: {
    name: 'read_file',
    description: 'Read a text file of the workspace.',
    input_schema: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Relative to the workspace.' },
        max_bytes: { type: 'integer', minimum: 1, description: `At most this many bytes (default and limit ${OUTPUT_CAP}).` },
      },
      required: ['path'],
    },
  },
  run: guarded((input, { workspace }) => {
    const path = stringArg(input, 'path');
    const limit = Math.max(1, Math.min(numberArg(input, 'max_bytes', OUTPUT_CAP), OUTPUT_CAP));
    const file = workspace.openForReading(path);
    try {
      // Only what is returned is read: memory follows max_bytes, not the file.
      const data = Buffer.alloc(limit);
      let read = 0;
      for (let n = -1; n !== 0 && read < limit; read += n) n = readSync(file.fd, data, read, limit - read, read);
      if (data.subarray(0, read).includes(0)) return { content: `${path} is a binary file of ${file.stats.size} bytes` };
      const size = file.stats.size;
      return { content: `${data.subarray(0, read).toString('utf8')}${size > read ? `\n[… cut at ${read} bytes of ${size}]` : ''}` };
    } finally {
      closeSync(file.fd);
    }
  }),
};

export const writeFile: AgentTool = {
  readOnly: false,
  external: true,
  definition: {
    name: 'write_file',
    description: 'Create or overwrite a file of the workspace (parent directories are created).',
    input_schema: {
      type: 'object',
      properties: { path: { type: 'string', description: 'Relative to the workspace.' }, content: { type: 'string' } },
      required: ['path', 'content'],
    },
  },
  run: guarded((input, { workspace }) => {
    const path = stringArg(input, 'path');
    const content = Buffer.from(stringArg(input, 'content'));
    const file = workspace.openForWriting(path);
    try {
      ftruncateSync(file.fd, 0);
      for (let written = 0; written < content.length; ) written += writeSync(file.fd, content, written);
    } finally {
      closeSync(file.fd);
    }
    return { content: `wrote ${content.length} bytes to ${workspace.show(file.full)}` };
  }),
};

export const listFiles: AgentTool = {
  readOnly: true,
  external: true,
  definition: {
    name: 'list_files',
    description: `List a directory of the workspace (recursive skips ${[...SKIPPED_DIRS].join(' and ')}).`,
    input_schema: {
      type: 'object',
      properties: { path: { type: 'string', description: 'Default: the workspace root.' }, recursive: { type: 'boolean' } },
    },
  },
  run: guarded((input, { workspace }) => {
    const { full: start, stats } = workspace.existing(stringArg(input, 'path', '.'));
    if (!stats.isDirectory()) return { content: `${workspace.show(start)} (${stats.size} bytes)` };
    const lines: string[] = [];
    const visit = (dir: string) => {
      for (const entry of sortedEntries(dir)) {
        if (lines.length >= LIST_CAP) return;
        const full = join(dir, entry.name);
        const shown = workspace.show(full);
        if (entry.isDirectory()) {
          lines.push(`${shown}/`);
          if (input.recursive === true && !SKIPPED_DIRS.has(entry.name)) visit(full);
        } else if (entry.isSymbolicLink()) {
          lines.push(`${shown} (link, not followed)`);
        } else if (entry.isFile()) {
          lines.push(`${shown} (${lstatSync(full).size} bytes)`);
        } else {
          lines.push(`${shown} (not a regular file)`);
        }
      }
    };
    visit(start);
    if (lines.length >= LIST_CAP) lines.push(`[… stopped at ${LIST_CAP} entries]`);
    return { content: lines.join('\n') || '(empty)' };
  }),
};

function sortedEntries(dir: string): Dirent[] {
  return readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name));
}
