import { spawn } from 'node:child_process';
import { countElsewhere, type CountedElsewhere } from './output-counter.js';
import { detached } from '../../detached.js';

export interface ShellOptions {
  command: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** Bytes of each stream kept; the rest is counted and dropped as it arrives. */
  maxOutput: number;
  /** Stop the command once it printed more than maxOutput (setup steps), instead of draining it. */
  stopAtMaxOutput?: boolean;
  signal: AbortSignal;
  /** Wraps `sh -c COMMAND` in a sandbox (bubblewrap), or runs it as it is. */
  wrap?: (argv: string[]) => string[];
}

export interface ShellResult {
  /** The exit code, or null when a signal ended it. */
  code: number | null;
  timedOut: boolean;
  /** The run was stopped (its timeout, a signal, its end). */
  aborted: boolean;
  /** It printed more than maxOutput and was stopped for it (stopAtMaxOutput). */
  overflowed: boolean;
  stdout: string;
  stderr: string;
  stdoutBytes: number;
  stderrBytes: number;
  /** A failure to start it at all. */
  error?: string;
}

/** How long the pipes may stay open after the shell ended (a grandchild holding them is killed first). */
const DRAIN_MS = 500;

/**
 * One shell command, as setup steps and run_command run it (docs/design.md: the tool boundary): in a process group of its
 * own, killed whole (grandchildren too) on its timeout, when the run stops, and when the shell
 * exits; its output is capped while it streams, so memory follows the cap, not the output.
 */
export function runShell(options: ShellOptions): Promise<ShellResult> {
  const argv = options.wrap ? options.wrap(['sh', '-c', options.command]) : ['sh', '-c', options.command];
  return new Promise((resolve) => {
    const result: ShellResult = { code: null, timedOut: false, aborted: false, overflowed: false, stdout: '', stderr: '', stdoutBytes: 0, stderrBytes: 0 };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(argv[0]!, argv.slice(1), { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    } catch (e) {
      return resolve({ ...result, error: (e as Error).message });
    }
    const kept = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    let settled = false;
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    /** The streams past their cap whose rest another process counts. */
    const elsewhere: { name: 'stdout' | 'stderr'; counted: CountedElsewhere }[] = [];
    /** Who counts each stream past its cap: `wc`, or Node itself when `wc` could not be started. */
    const countedBy: Partial<Record<'stdout' | 'stderr', 'wc' | 'node'>> = {};
    const collect = (name: 'stdout' | 'stderr') => (chunk: Buffer) => {
      const before = result[`${name}Bytes`];
      result[`${name}Bytes`] += chunk.length;
      if (before < options.maxOutput) kept[name].push(chunk.subarray(0, options.maxOutput - before));
      else if (options.stopAtMaxOutput) {
        if (!result.overflowed) {
          result.overflowed = true;
          killGroup();
        }
      } else if (!countedBy[name]) {
        const counted = countElsewhere(child[name]!);
        countedBy[name] = counted ? 'wc' : 'node';
        if (counted) elsewhere.push({ name, counted });
      }
    };
    child.stdout!.on('data', collect('stdout'));
    child.stderr!.on('data', collect('stderr'));
    const timer = setTimeout(() => {
      result.timedOut = true;
      killGroup();
    }, options.timeoutMs);
    const onAbort = () => {
      result.aborted = true;
      killGroup();
    };
    if (options.signal.aborted) onAbort();
    options.signal.addEventListener('abort', onAbort, { once: true });
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(drain);
      options.signal.removeEventListener('abort', onAbort);
      child.stdout!.destroy();
      child.stderr!.destroy();
      result.stdout = Buffer.concat(kept.stdout).toString('utf8');
      result.stderr = Buffer.concat(kept.stderr).toString('utf8');
      if (elsewhere.length === 0) return resolve(result);
      // The counters end when the command's pipes close; one a leftover process holds open is given up.
      const giveUp = setTimeout(() => {
        for (const { counted } of elsewhere) counted.stop();
      }, DRAIN_MS);
      const counted = () => {
        clearTimeout(giveUp);
        resolve(result);
      };
      // A counter that fails leaves its count as it stands: the command's result is whole all the same.
      detached(Promise.all(elsewhere.map(async ({ name, counted }) => (result[`${name}Bytes`] += await counted.bytes))).then(counted), counted);
    };
    let drain: NodeJS.Timeout | undefined;
    child.on('error', (e) => {
      result.error = e.message;
      finish();
    });
    child.on('exit', (code) => {
      result.code = code;
      // Whatever the shell left behind goes with it; its pipes then close, or are closed.
      killGroup();
      drain = setTimeout(finish, DRAIN_MS);
    });
    child.on('close', finish);
  });
}

/** The bytes a cap cut off, in words, or nothing. */
export function cutNote(total: number, cap: number): string {
  return total > cap ? `\n[… cut at ${cap} bytes of ${total}]` : '';
}
