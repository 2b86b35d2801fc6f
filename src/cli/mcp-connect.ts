import { dirname } from 'node:path';
import { McpToolbox } from '../agents/tools/mcp.js';
import { McpStartError, startMcpServers } from '../agents/tools/mcp-servers.js';
import { toolEnvironment } from '../agents/tools/tool-env.js';
import { serverConfigs, unknownMcpTools } from '../engine/mcp-setup.js';
import { baseScope, declaredEnv } from '../engine/setup.js';
import { UnresolvedValueError } from '../workflow/fill.js';
import type { Workflow } from '../workflow/load.js';
import type { Scalar } from '../workflow/types.js';
import { maskerFor } from './secrets.js';

/**
 * `validate --connect`: starts the workflow's MCP servers as a run would (the inputs' defaults
 * filled in, from the workflow's directory) and checks every `tools:` entry against what they
 * list, calling no model. What is wrong, in sentences.
 */
export async function connectProblems(workflow: Workflow): Promise<string[]> {
  if (Object.keys(workflow.spec.mcp_servers ?? {}).length === 0) return [];
  const inputs = Object.fromEntries(Object.entries(workflow.spec.inputs ?? {}).flatMap(([name, spec]) => (spec.default === undefined ? [] : [[name, spec.default as Scalar]])));
  const base = baseScope(workflow, inputs, 'validate', '');
  let started: Awaited<ReturnType<typeof startMcpServers>>;
  try {
    const env = toolEnvironment(process.env, declaredEnv(workflow, base), workflow.spec.tools_env ?? []);
    const { masker } = maskerFor(workflow, inputs, process.env.ANTHROPIC_API_KEY, 'validate', '');
    started = await startMcpServers(serverConfigs(workflow, base), env, dirname(workflow.file), (t) => masker.loose(t));
  } catch (e) {
    if (e instanceof McpStartError || e instanceof UnresolvedValueError) return [e.message];
    throw e;
  }
  const toolbox = new McpToolbox(started.listings, undefined, started.close);
  try {
    return unknownMcpTools(workflow, toolbox);
  } finally {
    await toolbox.close();
  }
}
