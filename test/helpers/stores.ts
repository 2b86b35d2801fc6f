import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Real Redis and PostgreSQL servers for the cache tests, each on its own port and data
 * directory, from Debian's packages (`apt-get install -y redis-server postgresql`; .ci/run
 * installs them). Where one is missing the tests skip loudly, unless CONCLAVE_REQUIRE_STORES is
 * set (as in CI), where they fail.
 */
export interface StoreServer {
  url: string;
  port: number;
  process: ChildProcess;
  /** SIGKILL, and wait until the port is closed. */
  kill(): Promise<void>;
}

export const REDIS_BIN = '/usr/bin/redis-server';

/** The directory of PostgreSQL's server programs (initdb, postgres), or undefined. */
export function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] && join(root, versions[0], 'bin');
}

/** Why the store tests cannot run here, or undefined when they can. */
export function missingStores(): string | undefined {
  if (!existsSync(REDIS_BIN)) return 'redis-server is not installed';
  if (!postgresBin()) return 'PostgreSQL is not installed';
  if (process.getuid?.() === 0 && !existsSync('/usr/sbin/runuser')) return 'runuser is missing (PostgreSQL will not run as root)';
  return undefined;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A Redis server with no persistence; `password` turns on AUTH. */
export async function startRedis(options: { password?: string } = {}): Promise<StoreServer> {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', mkdtempSync(join(tmpdir(), 'conclave-redis-'))];
  if (options.password) args.push('--requirepass', options.password);
  const child = spawn(REDIS_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  await ready(child, /Ready to accept connections/, 'redis-server');
  const auth = options.password ? `:${options.password}@` : '';
  return { url: `redis://${auth}127.0.0.1:${port}`, port, process: child, kill: () => kill(child) };
}

export const PG_USER = 'conclave';
export const PG_PASSWORD = 'cache-test-password';

/** A PostgreSQL server in a fresh data directory, with password authentication for PG_USER. */
export async function startPostgres(): Promise<StoreServer> {
  const bin = postgresBin()!;
  const port = await freePort();
  // Under /tmp itself: the postgres user cannot enter the test run's private temporary directory.
  const base = mkdtempSync('/tmp/conclave-pg-');
  const data = join(base, 'data');
  const pwfile = join(base, 'password');
  writeFileSync(pwfile, `${PG_PASSWORD}\n`);
  const root = process.getuid?.() === 0;
  if (root) {
    const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres']).toString()));
    chownSync(base, uid!, gid!);
    chownSync(pwfile, uid!, gid!);
  }
  const as = (command: string, args: string[]) =>
    (root ? ['/usr/sbin/runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args]) as [string, string[]];
  execFileSync(...as(join(bin, 'initdb'), ['-D', data, '-U', PG_USER, '--pwfile', pwfile, '--auth=scram-sha-256', '-E', 'UTF8', '--no-sync']), {
    stdio: 'pipe',
  });
  const child = spawn(...as(join(bin, 'postgres'), ['-D', data, '-p', String(port), '-k', data, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off']), {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await ready(child, /ready to accept connections/, 'postgres');
  const stop = () => kill(child).then(() => rmSync(base, { recursive: true, force: true }));
  return { url: `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${port}/postgres`, port, process: child, kill: stop };
}

function ready(child: ChildProcess, line: RegExp, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not start in 20 s:\n${output}`)), 20_000);
    const look = (chunk: Buffer) => {
      output += chunk.toString();
      if (line.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', look);
    child.stderr!.on('data', look);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}) before it was ready:\n${output}`));
    });
  });
}

/** Kills the server (under runuser, the whole process tree) and waits for it to be gone. */
async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  // The tree first: killing runuser alone would leave postgres running, an orphan.
  for (const pid of [...descendants(child.pid!), child.pid!]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await gone;
}

function descendants(pid: number): number[] {
  let children: number[] = [];
  try {
    children = execFileSync('pgrep', ['-P', String(pid)])
      .toString()
      .trim()
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
  return children.flatMap((c) => [...descendants(c), c]);
}
