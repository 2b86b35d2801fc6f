import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, rmdirSync } from 'node:fs';
import { delimiter, dirname, join, resolve, sep } from 'node:path';

export type SandboxMode = 'auto' | 'required' | 'off';
export type SandboxSetting = SandboxMode | { mode?: SandboxMode; network?: boolean };

/** How run_command's commands are wrapped; `why` says why there is no sandbox, when there is none. */
export interface SandboxPlan {
  wrap?: (argv: string[]) => string[];
  /** Called after each wrapped command: removes the empty mount points bubblewrap had to make. */
  after?: () => void;
  why?: string;
}

/** Inside the workspace, what commands may read but never write (docs/security.md). */
export interface SandboxProtection {
  /** `edit_github_workflows: true`: .github/workflows/ stays writable. */
  githubWorkflows?: boolean;
  /** Files written by this run (its session file) that are read-only to commands wherever they are. */
  files?: readonly string[];
  /** Where the run's model providers keep credentials: hidden from commands (an empty file, an empty directory). */
  hidden?: { files: readonly string[]; dirs: readonly string[] };
}

let probed: { bwrap?: string; why?: string } | undefined;

/** Where bubblewrap is, once it ran here; or why it cannot be used (not installed, or not allowed). */
export function findBubblewrap(env: NodeJS.ProcessEnv = process.env): { bwrap?: string; why?: string } {
  if (probed) return probed;
  const bwrap = (env.PATH ?? '')
    .split(delimiter)
    .map((dir) => join(dir, 'bwrap'))
    .find((file) => {
      try {
        accessSync(file, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  if (!bwrap) return (probed = { why: 'bubblewrap (bwrap) is not installed' });
  // Installed is not enough: user namespaces may be forbidden (some CI runners, containers).
  const trial = spawnSync(bwrap, ['--ro-bind', '/', '/', '--dev', '/dev', '--unshare-net', '--die-with-parent', 'true'], { timeout: 5000, encoding: 'utf8' });
  if (trial.status !== 0) return (probed = { why: `bubblewrap cannot run here: ${(trial.stderr || trial.error?.message || `exit ${trial.status}`).trim()}` });
  return (probed = { bwrap });
}

export function sandboxMode(setting: SandboxSetting | undefined): { mode: SandboxMode; network: boolean } {
  if (setting === undefined) return { mode: 'auto', network: false };
  if (typeof setting === 'string') return { mode: setting, network: false };
  return { mode: setting.mode ?? 'auto', network: setting.network === true };
}

/**
 * The sandbox of run_command (docs/design.md: the tool boundary): with bubblewrap, the file system read-only but the
 * workspace, a private /tmp, no network unless `network: true`, and the process tree bound to
 * conclave's life. `off` keeps the file system and the network as they are, but where
 * bubblewrap runs a command still gets a process namespace and a /proc of its own: it cannot read
 * the environment of conclave or of the job step that started it (the API key) through /proc,
 * and nothing it starts outlives it. `auto` where bubblewrap cannot run runs commands as they are.
 */
export function sandboxPlan(setting: SandboxSetting | undefined, workspace: string, protection: SandboxProtection = {}): SandboxPlan {
  const { mode, network } = sandboxMode(setting);
  const { bwrap, why } = findBubblewrap();
  if (mode === 'off') {
    if (!bwrap) return { why: 'sandbox: off' };
    const own = ['--dev-bind', '/', '/', '--proc', '/proc', '--chdir', workspace, '--unshare-pid', '--die-with-parent', '--new-session'];
    return { wrap: (argv) => [bwrap, ...own, '--', ...argv], why: 'sandbox: off' };
  }
  if (!bwrap) return { why };
  const { args: readOnly, made } = readOnlyMounts(workspace, protection);
  const args = [
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    '--bind',
    workspace,
    workspace,
    ...readOnly,
    '--chdir',
    workspace,
    '--setenv',
    'TMPDIR',
    '/tmp',
    '--unshare-pid',
    ...(network ? [] : ['--unshare-net']),
    '--die-with-parent',
    '--new-session',
  ];
  return { wrap: (argv) => [bwrap, ...args, '--', ...argv], after: () => removeEmpty(made) };
}

/**
 * git's directory (its config and hooks run code in the job's next git command), conclave's own
 * (sessions, cache, locks) and the GitHub workflows, read-only inside the sandbox. One that does
 * not exist yet becomes an empty read-only directory, so that a command cannot create it either;
 * bubblewrap makes its mount point, which is removed again after the command while empty.
 */
function readOnlyMounts(workspace: string, protection: SandboxProtection): { args: string[]; made: string[] } {
  const args: string[] = [];
  const made: string[] = [];
  const dirs = ['.git', '.conclave', ...(protection.githubWorkflows ? [] : ['.github/workflows'])];
  for (const dir of dirs) {
    const full = join(workspace, dir);
    if (existsSync(full)) {
      args.push('--ro-bind', full, full);
    } else {
      args.push('--tmpfs', full, '--remount-ro', full);
      made.push(full);
      if (dir.includes('/') && !existsSync(dirname(full))) made.push(dirname(full));
    }
  }
  for (const file of protection.files ?? []) {
    const full = resolve(file);
    if (full.startsWith(workspace + sep) && existsSync(full)) args.push('--ro-bind', full, full);
  }
  for (const file of protection.hidden?.files ?? []) if (existsSync(file)) args.push('--ro-bind', '/dev/null', resolve(file));
  for (const dir of protection.hidden?.dirs ?? []) if (existsSync(dir)) args.push('--tmpfs', resolve(dir), '--remount-ro', resolve(dir));
  return { args, made };
}

function removeEmpty(dirs: readonly string[]): void {
  for (const dir of dirs) {
    try {
      rmdirSync(dir);
    } catch {
      // not empty, gone, or still a mount point of a command that runs: left as it is
    }
  }
}

/** Why a workflow that wants a sandbox (`required`) for its run_command cannot have one here, or nothing. */
export function missingRequiredSandbox(setting: SandboxSetting | undefined, usesRunCommand: boolean): string | undefined {
  if (!usesRunCommand || sandboxMode(setting).mode !== 'required') return undefined;
  const { why } = findBubblewrap();
  return why
    ? `the workflow sets sandbox: required and gives an agent run_command, but ${why}; install bubblewrap (apt-get install bubblewrap), or change sandbox:`
    : undefined;
}
