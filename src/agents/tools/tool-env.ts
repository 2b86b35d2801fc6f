import type { ProviderName } from '../../provider/clouds.js';
import { credentialOf } from '../../provider/credential-names.js';

/** What run_command and MCP servers start from (docs/design.md: the tool boundary): enough to run programs, nothing secret. */
const BASE = ['PATH', 'HOME', 'LANG', 'TERM', 'TMPDIR', 'USER', 'SHELL'];

/**
 * A tool's environment: the minimal base (`PATH`, `HOME`, `LANG`, `LC_*`, `TERM`, `TMPDIR`,
 * `USER`, `SHELL`) from the process, the workflow's `env:`, and the process variables the
 * workflow names in `tools_env`; never a credential of conclave's (`providers`: those the run uses).
 */
export function toolEnvironment(
  processEnv: NodeJS.ProcessEnv,
  declared: Readonly<Record<string, string>>,
  toolsEnv: readonly string[] = [],
  providers: readonly ProviderName[] = [],
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(processEnv)) {
    if (value !== undefined && (BASE.includes(name) || name.startsWith('LC_') || toolsEnv.includes(name))) env[name] = value;
  }
  Object.assign(env, declared);
  for (const name of Object.keys(env)) if (credentialOf(name, providers)) delete env[name];
  return env;
}

/** Only the minimal base of an environment: what a tainted agent's commands get (docs/security.md: untrusted content). */
export function baseEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => BASE.includes(name) || name.startsWith('LC_')));
}
