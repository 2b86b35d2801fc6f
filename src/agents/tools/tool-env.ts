/** What run_command and MCP servers start from (docs/design.md: the tool boundary): enough to run programs, nothing secret. */
const BASE = ['PATH', 'HOME', 'LANG', 'TERM', 'TMPDIR', 'USER', 'SHELL'];

/** Names no tool ever gets: conclave's own credentials. */
export function isConclaveCredential(name: string): boolean {
  return /^ANTHROPIC_/i.test(name);
}

/**
 * A tool's environment: the minimal base (`PATH`, `HOME`, `LANG`, `LC_*`, `TERM`, `TMPDIR`,
 * `USER`, `SHELL`) from the process, the workflow's `env:`, and the process variables the
 * workflow names in `tools_env`; never `ANTHROPIC_*`.
 */
export function toolEnvironment(processEnv: NodeJS.ProcessEnv, declared: Readonly<Record<string, string>>, toolsEnv: readonly string[] = []): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(processEnv)) {
    if (value !== undefined && (BASE.includes(name) || name.startsWith('LC_') || toolsEnv.includes(name))) env[name] = value;
  }
  Object.assign(env, declared);
  for (const name of Object.keys(env)) if (isConclaveCredential(name)) delete env[name];
  return env;
}
