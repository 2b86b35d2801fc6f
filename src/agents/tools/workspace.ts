import { spawn } from 'node:child_process';
import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync, type Dirent } from 'node:fs';
import { dirname, join } from 'node:path';
import { numberArg, stringArg, ToolInputError, type AgentTool, type ToolContext, type ToolResult } from './tool.js';

const OUTPUT_CAP = 64 * 1024;
const LIST_CAP = 1000;
const GREP_MATCH_CAP = 200;
const GREP_TIME_MS = 10_000;
const SKIPPED_DIRS = new Set(['.git', 'node_modules']);

/** Runs a workspace tool; bad input and refused paths come back as tool errors. */
function guarded(run: (input: Record<string, unknown>, context: ToolContext) => ToolResult | Promise<ToolResult>) {
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

function cap(text: string, limit = OUTPUT_CAP): string {
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
    const full = workspace.existing(path);
    if (lstatSync(full).isDirectory()) throw new ToolInputError(`${path} is a directory; use list_files`);
    const data = readFileSync(full);
    if (data.includes(0)) return { content: `${path} is a binary file of ${data.length} bytes` };
    return { content: cap(data.toString('utf8'), Math.min(numberArg(input, 'max_bytes', OUTPUT_CAP), OUTPUT_CAP)) };
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
    const content = stringArg(input, 'content');
    const full = workspace.writable(path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
    return { content: `wrote ${Buffer.byteLength(content)} bytes to ${workspace.show(full)}` };
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
    const start = workspace.existing(stringArg(input, 'path', '.'));
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
          lines.push(`${shown} (link)`);
        } else {
          lines.push(`${shown} (${lstatSync(full).size} bytes)`);
        }
      }
    };
    visit(start);
    if (lines.length >= LIST_CAP) lines.push(`[… stopped at ${LIST_CAP} entries]`);
    return { content: lines.join('\n') || '(empty)' };
  }),
};

export const grep: AgentTool = {
  readOnly: true,
  external: true,
  definition: {
    name: 'grep',
    description: `Search the workspace's text files for a regular expression; prints file:line: text (skips ${[...SKIPPED_DIRS].join(' and ')}).`,
    input_schema: {
      type: 'object',
      properties: {
        pattern: { type: 'string', description: 'A JavaScript regular expression.' },
        path: { type: 'string', description: 'A file or directory (default: the workspace root).' },
        ignore_case: { type: 'boolean' },
      },
      required: ['pattern'],
    },
  },
  run: guarded((input, { workspace }) => {
    let regex: RegExp;
    try {
      regex = new RegExp(stringArg(input, 'pattern'), input.ignore_case === true ? 'i' : '');
    } catch (e) {
      throw new ToolInputError(`invalid pattern: ${(e as Error).message}`);
    }
    const matches: string[] = [];
    const deadline = Date.now() + GREP_TIME_MS;
    let note = '';
    const search = (full: string) => {
      const data = readFileSync(full);
      if (data.includes(0)) return;
      data.toString('utf8').split('\n').forEach((line, i) => {
        if (matches.length < GREP_MATCH_CAP && regex.test(line)) matches.push(`${workspace.show(full)}:${i + 1}: ${line.slice(0, 300)}`);
      });
    };
    const visit = (dir: string) => {
      for (const entry of sortedEntries(dir)) {
        if (matches.length >= GREP_MATCH_CAP) return void (note = `[… stopped at ${GREP_MATCH_CAP} matches]`);
        if (Date.now() > deadline) return void (note = `[… stopped after ${GREP_TIME_MS / 1000} s]`);
        const full = join(dir, entry.name);
        if (entry.isDirectory() && !SKIPPED_DIRS.has(entry.name)) visit(full);
        else if (entry.isFile()) search(full);
      }
    };
    const start = workspace.existing(stringArg(input, 'path', '.'));
    if (lstatSync(start).isDirectory()) visit(start);
    else search(start);
    return { content: cap([...matches, note].filter(Boolean).join('\n') || 'No matches.') };
  }),
};

export const runCommand: AgentTool = {
  readOnly: false,
  external: true,
  definition: {
    name: 'run_command',
    description: 'Run a shell command (sh -c) in the workspace directory; returns its exit code, stdout and stderr.',
    input_schema: {
      type: 'object',
      properties: {
        command: { type: 'string' },
        timeout_seconds: { type: 'integer', minimum: 1, maximum: 600, description: 'Default 60.' },
      },
      required: ['command'],
    },
  },
  run: guarded((input, { workspace, env, signal }) => {
    const command = stringArg(input, 'command');
    const timeoutMs = Math.min(Math.max(numberArg(input, 'timeout_seconds', 60), 1), 600) * 1000;
    return new Promise<ToolResult>((resolve) => {
      const child = spawn('sh', ['-c', command], { cwd: workspace.root, env, signal, stdio: ['ignore', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
      child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('error', (e) => {
        clearTimeout(timer);
        resolve({ content: `could not run the command: ${e.message}`, isError: true });
      });
      child.on('close', (code, killedBy) => {
        clearTimeout(timer);
        const head = killedBy ? `killed by ${killedBy}${killedBy === 'SIGKILL' ? ` (timed out after ${timeoutMs / 1000} s)` : ''}` : `exit code ${code}`;
        const body = `${head}\n--- stdout ---\n${cap(Buffer.concat(out).toString('utf8'))}\n--- stderr ---\n${cap(Buffer.concat(err).toString('utf8'))}`;
        resolve({ content: body, isError: code !== 0 });
      });
    });
  }),
};

function sortedEntries(dir: string): Dirent[] {
  return readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name));
}
