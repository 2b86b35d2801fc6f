import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic } from '../fake-anthropic/server.js';
import { BIN, NODE } from './cli.js';
import { TEST_API_KEY } from './run-workflow.js';

/**
 * The attack corpus's harness: conclave run through the CLI where the model makes the hostile
 * tool calls, with the outcome, the wall time and conclave's peak memory (VmHWM of the conclave
 * process, read from /proc while it runs).
 */
export const PEAK_KB = 300 * 1024;

export interface Measured {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
  peakKb: number;
  /** The tool results the model got back, in order. */
  results: { content: string; is_error?: boolean }[];
}

export function workflow(tools: string, extra = ''): string {
  return `name: attack\n${extra}\nagents:\n  lead: { role: manager, tools: [${tools}] }\nkickoff: Go.\n`;
}

/** Runs conclave in `dir` where the model makes `calls` (one step), then says done; measures it. */
export async function attack(
  dir: string,
  calls: { name: string; input: Record<string, unknown> }[],
  yml: string,
  options: { env?: NodeJS.ProcessEnv; onStart?: (pid: number) => void; args?: string[]; during?: () => void } = {},
): Promise<Measured> {
  const server = await startFakeAnthropic({ lead: [{ tools: calls }, { text: 'done' }] });
  writeFileSync(join(dir, 'workflow.yml'), yml);
  const started = Date.now();
  const child = spawn(NODE, [BIN, 'run', 'workflow.yml', '--json', ...(options.args ?? [])], {
    cwd: dir,
    env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY, ...options.env },
  });
  options.onStart?.(child.pid!);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  let peakKb = 0;
  const poll = setInterval(() => {
    try {
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
      // Once the run has called the model: a look at conclave from outside while it runs.
      if (server.requests.length > 0) options.during?.();
    } catch {
      // it has just ended
    }
  }, 25);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearInterval(poll);
  await server.close();
  const second = server.of('lead')[1];
  const last = second?.body.messages.at(-1)?.content;
  return { code, stdout, stderr, ms: Date.now() - started, peakKb, results: Array.isArray(last) ? (last as Measured['results']) : [] };
}

export const fresh = (name: string) => mkdtempSync(join(tmpdir(), `conclave-${name}-`));
