import { COOKIE_NAME, newCookie, sweep } from './process-sweep.js';
import { cutNote, runShell } from './shell.js';
import { defineTool, input } from './define-tool.js';
import type { ToolResult } from './tool.js';
import { OUTPUT_CAP } from './workspace.js';

/**
 * `run_command`: `sh -c` in the workspace, in the sandbox where there is one, with the tool
 * environment (docs/design.md: the tool boundary), in its own process group killed whole at its timeout or the run's end.
 */
export const runCommand = defineTool({
  name: 'run_command',
  description: 'Run a shell command (sh -c) in the workspace directory; returns its exit code, stdout and stderr (each cut at 64 KiB).',
  readOnly: false,
  external: true,
  input: {
    command: input.string(),
    timeout_seconds: input.integer({ minimum: 1, maximum: 600, description: 'Default 60.' }).optional(),
  },
  run: async ({ command, timeout_seconds }, { workspace, env, signal, sandbox }): Promise<ToolResult> => {
    const timeoutMs = Math.min(Math.max(timeout_seconds ?? 60, 1), 600) * 1000;
    // What the command started outside its process group (setsid) goes with it too.
    const cookie = newCookie();
    const r = await runShell({
      command,
      cwd: workspace.root,
      env: { ...env, [COOKIE_NAME]: cookie },
      timeoutMs,
      maxOutput: OUTPUT_CAP,
      signal,
      wrap: sandbox?.wrap,
    }).finally(() => {
      sweep(cookie);
      sandbox?.after?.();
    });
    if (r.error) return { content: `could not run the command: ${r.error}`, isError: true };
    const head = r.timedOut
      ? `killed: timed out after ${timeoutMs / 1000} s`
      : r.aborted
        ? 'killed: the run stopped'
        : r.code === null
          ? 'killed by a signal'
          : `exit code ${r.code}`;
    const body = `${head}\n--- stdout ---\n${r.stdout}${cutNote(r.stdoutBytes, OUTPUT_CAP)}\n--- stderr ---\n${r.stderr}${cutNote(r.stderrBytes, OUTPUT_CAP)}`;
    return { content: body, isError: r.code !== 0 };
  },
});
