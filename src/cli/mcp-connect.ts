import { dirname } from 'node:path';
import { McpToolbox } from '../agents/tools/mcp.js';
import { McpStartError, startMcpServers } from '../agents/tools/mcp-servers.js';
import { toolEnvironment } from '../agents/tools/tool-env.js';
import { providersOf } from '../workflow/providers-used.js';
import { serverConfigs, unknownMcpTools } from '../engine/mcp-setup.js';
import { baseScope, declaredEnv } from '../engine/setup.js';
import { UnresolvedValueError } from '../workflow/fill.js';
import type { Workflow } from '../workflow/load.js';
import type { Scalar } from '../workflow/types.js';
import type { Diagnostic } from '../workflow/diagnostic.js';
import { WorkflowSource } from '../workflow/source.js';
import { InputError, resolveInputs } from '../engine/inputs.js';
import { maskerFor } from './secrets.js';

/**
 * `validate --connect`: starts the workflow's MCP servers as a run would (the inputs' defaults
 * filled in, from the workflow's directory) and checks every `tools:` entry against what they
 * list, calling no model. What is wrong, in sentences.
 */
export async function connectProblems(workflow: Workflow, pairs: readonly string[] = []): Promise<Diagnostic[]> {
  if (Object.keys(workflow.spec.mcp_servers ?? {}).length === 0) return [];
  const source = new WorkflowSource(workflow.file, workflow.text);
  const at = (path: (string | number)[], message: string): Diagnostic => source.error(source.keyPosition(path), message);
  let inputs: Record<string, Scalar>;
  try {
    // -i values where given, defaults elsewhere; a required input may be left out here.
    const given = new Set(pairs.map((p) => p.slice(0, p.indexOf('='))));
    const specs = Object.fromEntries(
      Object.entries(workflow.spec.inputs ?? {}).map(([name, spec]) => [name, given.has(name) ? spec : { ...spec, required: false }]),
    );
    inputs = resolveInputs(specs, pairs);
  } catch (e) {
    if (e instanceof InputError) return [at(['inputs'], e.message)];
    throw e;
  }
  const base = baseScope(workflow, inputs, 'validate', '');
  let started: Awaited<ReturnType<typeof startMcpServers>>;
  try {
    const env = toolEnvironment(process.env, declaredEnv(workflow, base), workflow.spec.tools_env ?? [], providersOf(workflow.spec));
    const { masker } = maskerFor(workflow, inputs, process.env.ANTHROPIC_API_KEY, 'validate', '');
    started = await startMcpServers(serverConfigs(workflow, base), env, dirname(workflow.file), (t) => masker.loose(t));
  } catch (e) {
    if (e instanceof McpStartError) return [at(['mcp_servers', e.server], e.message)];
    if (e instanceof UnresolvedValueError) return [e.diagnostic];
    throw e;
  }
  const toolbox = new McpToolbox(started.listings, undefined, started.close);
  try {
    return unknownMcpTools(workflow, toolbox).map((p) => at(p.path, p.message));
  } finally {
    await toolbox.close();
  }
}
