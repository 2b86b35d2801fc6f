import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, NODE, ROOT } from './cli.js';

/** A process of the built CLI started in the background: its output so far, its exit. */
export interface Background {
  child: ChildProcess;
  /** stdout and stderr as they came. */
  output(): string;
  stdout(): string;
  exited: Promise<number | null>;
}

/** Starts `conclave ARGS…` in `cwd` without waiting for it; `bin` may be another build's. */
export function startConclave(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, bin = BIN): Background {
  const child = spawn(NODE, [bin, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let stdout = '';
  child.stdout!.on('data', (c: Buffer) => ((output += c.toString()), (stdout += c.toString())));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  return { child, output: () => output, stdout: () => stdout, exited };
}

/** A checkout for a worker: a directory holding the same workflow file as the coordinator's. */
export function checkout(workflow: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-worker-'));
  writeFileSync(join(dir, 'workflow.yml'), workflow);
  return dir;
}

export function startWorker(url: string, queue: string, dir: string, env: NodeJS.ProcessEnv, options: { concurrency?: number; bin?: string } = {}): Background {
  return startConclave(['worker', url, '--queue', queue, '--concurrency', String(options.concurrency ?? 1), '--idle-timeout', '2m'], dir, env, options.bin);
}

/** Waits until `condition` holds, polling; fails after `ms` saying what it waited for. */
export async function until(condition: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A copy of the built CLI that says it is another version: the same code, its package version
 * (in the chunk every command loads at start: scripts/build.js) changed, as a worker left on an
 * older release would be.
 */
export function otherVersionBuild(version: string): string {
  const root = mkdtempSync(join(tmpdir(), 'conclave-other-build-'));
  cpSync(join(ROOT, 'bin'), join(root, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'dist'), join(root, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(root, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
  const chunks = join(root, 'dist', 'chunks');
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const holding = readdirSync(chunks).filter((f) => f.endsWith('.js') && readFileSync(join(chunks, f), 'utf8').includes(`\`${pkg.version}\``));
  if (holding.length !== 1) throw new Error(`not one chunk of dist/ holds the version ${pkg.version}: ${holding.join(', ') || 'none'}`);
  const versionChunk = holding[0]!;
  const text = readFileSync(join(chunks, versionChunk), 'utf8');
  writeFileSync(join(chunks, versionChunk), text.replace(`\`${pkg.version}\``, `\`${version}\``));
  return join(root, 'bin', 'conclave.js');
}

/** The files a directory holds whose names start with `prefix`. */
export function filesOf(dir: string, prefix: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.startsWith(prefix))
    .sort();
}
