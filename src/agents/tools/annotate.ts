import { closeSync, readSync } from 'node:fs';
import { defineTool, input } from './define-tool.js';
import { ToolInputError } from './tool.js';

export const FINDING_LEVELS = ['notice', 'warning', 'failure'] as const;
export type FindingLevel = (typeof FINDING_LEVELS)[number];

/** The most of a file read to count its lines: a finding on a line past it is refused. */
const READ_CAP = 16 * 1024 * 1024;

/**
 * A finding about a line of a workspace file (docs/design.md: outputs and the Action): recorded in the session, shown by
 * `show` and the job summary, an annotation on that line in GitHub Actions, a result in --sarif.
 * The path must be a workspace file and the lines must exist in it.
 */
export const annotate = defineTool({
  name: 'annotate',
  description: "Record a finding about lines of a workspace file: it is shown on those lines of the pull request (in GitHub Actions) and in the run's report.",
  readOnly: true,
  external: true,
  input: {
    path: input.string({ description: 'A file of the workspace, relative to it.' }),
    line: input.integer({ minimum: 1, description: 'The first line the finding concerns (from 1).' }),
    end_line: input.integer({ minimum: 1, description: 'The last line, when it spans several.' }).optional(),
    level: input.string({ enum: [...FINDING_LEVELS, 'error'], description: 'notice, warning, or failure (also called error).' }),
    title: input.string({ description: 'A short title.' }).optional(),
    message: input.string({ description: 'What is wrong, and what to do about it.' }),
  },
  run: (given, { workspace }) => {
    const path = given.path.replace(/^\.\//, '');
    // Recorded as given, and shown as the line's file by GitHub and SARIF: only the plain form.
    if (path.split('/').some((part) => part === '' || part === '.') || path.includes('\\')) {
      throw new ToolInputError(`${path}: name the file as the repository does, such as src/app.js (no trailing /, no // or ./ inside, no \\)`);
    }
    const line = whole(given.line, 'line');
    const endLine = given.end_line === undefined ? line : whole(given.end_line, 'end_line');
    const level = given.level === 'error' ? 'failure' : given.level;
    if (given.message.trim() === '') throw new ToolInputError('message must say what the finding is');
    if (endLine < line) throw new ToolInputError(`end_line (${endLine}) is before line (${line})`);
    const lines = linesOf(workspace.openForReading(path));
    if (endLine > lines) throw new ToolInputError(`${path} has ${lines} line${lines === 1 ? '' : 's'}: there is no line ${endLine}`);
    return { content: `Recorded: ${level} on ${path}:${line}${endLine > line ? `-${endLine}` : ''}.` };
  },
});

function whole(n: number, name: string): number {
  if (!Number.isSafeInteger(n) || n < 1) throw new ToolInputError(`${name} must be a line number, from 1`);
  return n;
}

/** How many lines the file has (a last line without a newline counts). */
function linesOf(file: { fd: number }): number {
  try {
    const chunk = Buffer.alloc(64 * 1024);
    let lines = 0;
    let last = 0x0a;
    for (let read = 0, n = -1; n !== 0 && read < READ_CAP; read += n) {
      n = readSync(file.fd, chunk, 0, chunk.length, read);
      for (let i = 0; i < n; i++) if (chunk[i] === 0x0a) lines++;
      if (n > 0) last = chunk[n - 1]!;
    }
    return last === 0x0a ? lines : lines + 1;
  } finally {
    closeSync(file.fd);
  }
}
