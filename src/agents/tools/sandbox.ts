import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export type SandboxMode = 'auto' | 'required' | 'off';
export type SandboxSetting = SandboxMode | { mode?: SandboxMode; network?: boolean };

/** How run_command's commands are wrapped; `why` says why there is no sandbox, when there is none. */
export interface SandboxPlan {
  wrap?: (argv: string[]) => string[];
  why?: string;
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
 * The sandbox of run_command (DESIGN §8): with bubblewrap, the file system read-only but the
 * workspace, a private /tmp, no network unless `network: true`, and the process tree bound to
 * conclave's life. `off`, or `auto` where bubblewrap cannot run, runs commands as they are.
 */
export function sandboxPlan(setting: SandboxSetting | undefined, workspace: string): SandboxPlan {
  const { mode, network } = sandboxMode(setting);
  if (mode === 'off') return { why: 'sandbox: off' };
  const { bwrap, why } = findBubblewrap();
  if (!bwrap) return { why };
  const args = [
    '--ro-bind', '/', '/',
    '--dev', '/dev',
    '--proc', '/proc',
    '--tmpfs', '/tmp',
    '--bind', workspace, workspace,
    '--chdir', workspace,
    '--setenv', 'TMPDIR', '/tmp',
    '--unshare-pid',
    ...(network ? [] : ['--unshare-net']),
    '--die-with-parent',
    '--new-session',
  ];
  return { wrap: (argv) => [bwrap, ...args, '--', ...argv] };
}

/** Why a workflow that wants a sandbox (`required`) for its run_command cannot have one here, or nothing. */
export function missingRequiredSandbox(setting: SandboxSetting | undefined, usesRunCommand: boolean): string | undefined {
  if (!usesRunCommand || sandboxMode(setting).mode !== 'required') return undefined;
  const { why } = findBubblewrap();
  return why ? `the workflow sets sandbox: required and gives an agent run_command, but ${why}; install bubblewrap (apt-get install bubblewrap), or change sandbox:` : undefined;
}
