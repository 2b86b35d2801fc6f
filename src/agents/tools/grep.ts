import type { GrepJob } from './grep-worker.js';
import { bundledWorker } from './worker-file.js';
import { defineTool, input } from './define-tool.js';
import { ToolInputError, type ToolResult } from './tool.js';
import { cap, SKIPPED_DIRS } from './workspace.js';
import { detached, nothingToDo } from '../../detached.js';

const GREP_MATCH_CAP = 200;
const GREP_TIME_MS = 10_000;

/**
 * `grep`: a regular expression over the workspace's text files, in a worker thread with a
 * deadline that holds however the pattern backtracks; matches found before it are kept.
 */
export const grep = defineTool({
  name: 'grep',
  description: `Search the workspace's text files for a regular expression; prints file:line: text (skips ${[...SKIPPED_DIRS].join(' and ')}).`,
  readOnly: true,
  external: true,
  input: {
    pattern: input.string({ description: 'A JavaScript regular expression.' }),
    path: input.string({ description: 'A file or directory (default: the workspace root).' }).optional(),
    ignore_case: input.boolean().optional(),
  },
  run: async ({ pattern, path = '.', ignore_case }, { workspace, signal }): Promise<ToolResult> => {
    try {
      new RegExp(pattern);
    } catch (e) {
      throw new ToolInputError(`invalid pattern: ${(e as Error).message}`);
    }
    workspace.checkReadable(path);
    workspace.existing(path);
    const file = bundledWorker('grep-worker', import.meta.url);
    if (!file) return { content: 'grep is not available: its worker file is missing from this build of conclave', isError: true };
    const job: GrepJob = {
      root: workspace.root,
      steps: workspace.stepsOf(path),
      pattern,
      ignoreCase: ignore_case === true,
      maxMatches: GREP_MATCH_CAP,
      skipped: [...SKIPPED_DIRS],
      secret: [...workspace.secretFiles],
    };
    const matches: string[] = [];
    // Loaded when first used: a run that never greps does not load worker threads at its start.
    const { Worker } = await import('node:worker_threads');
    const note = await new Promise<string>((resolve) => {
      const worker = new Worker(file, { workerData: job, resourceLimits: { maxOldGenerationSizeMb: 256 } });
      const end = (why: string) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        detached(worker.terminate(), nothingToDo); // a thread that is gone already
        resolve(why);
      };
      const timer = setTimeout(
        () => end(`[… stopped after ${GREP_TIME_MS / 1000} s: the pattern or the files take too long; these are the matches found before]`),
        GREP_TIME_MS,
      );
      const onAbort = () => end('[… stopped: the run ended]');
      signal.addEventListener('abort', onAbort, { once: true });
      worker.on('message', (m: { type: 'matches'; lines: string[] } | { type: 'done'; limited: boolean }) => {
        if (m.type === 'matches') matches.push(...m.lines);
        else end(m.limited ? `[… stopped at ${GREP_MATCH_CAP} matches]` : '');
      });
      worker.on('error', (e) => end(`[… the search failed: ${e.message}]`));
      worker.on('exit', () => end(''));
    });
    return { content: cap([...matches, note].filter(Boolean).join('\n') || 'No matches.') };
  },
});
