import { McpToolbox, type McpListing } from '../agents/tools/mcp.js';
import type { McpServerConfig } from '../agents/tools/mcp-servers.js';
import type { Scope } from '../workflow/evaluate.js';
import { fillTemplate } from '../workflow/fill.js';
import { durationMs } from '../workflow/limits.js';
import type { Workflow } from '../workflow/load.js';
import { mcpToolRef } from '../workflow/tool-names.js';
import type { ProgressListener } from './progress-events.js';
import type { Journal } from './replay/journal.js';
import { SetupError } from './setup-error.js';

const DEFAULT_CALL_TIMEOUT = '60s';

export interface McpSetupOptions {
  workflow: Workflow;
  base: Scope;
  /** The minimal tool environment (docs/design.md: the tool boundary) servers start from. */
  toolEnv: NodeJS.ProcessEnv;
  cwd: string;
  journal: Journal;
  /** False for --replay: no server starts, the tools come from the recording. */
  startServers: boolean;
  mask: (text: string) => string;
  signal: AbortSignal;
  progress: ProgressListener;
}

/**
 * The workflow's MCP servers (docs/design.md: MCP servers), started once before the first turn, their tools
 * listed and recorded (`mcp_tools`), every `tools:` entry that names them checked: a server that
 * does not start, or a tool it does not have, stops the run before any model call. A replay
 * starts none: the recorded listings give the same tool definitions, and results come from the
 * recording.
 */
export async function connectMcp(options: McpSetupOptions): Promise<McpToolbox | undefined> {
  const { workflow, journal, signal } = options;
  const servers = Object.entries(workflow.spec.mcp_servers ?? {});
  if (servers.length === 0) return undefined;
  let toolbox: McpToolbox;
  if (!options.startServers) {
    const listings: McpListing[] = [];
    for (const [name] of servers) {
      const recorded = journal.mcpTools(name, signal);
      if (!recorded) throw new SetupError(`the session records no tools of the MCP server "${name}": it cannot be replayed without starting it`);
      const { tools } = await recorded;
      // Each listing at its place: the next one is released only once this one is produced.
      journal.append({ type: 'mcp_tools', server: name, tools });
      listings.push({ server: name, tools });
    }
    toolbox = new McpToolbox(listings, undefined);
  } else {
    const { startMcpServers, McpStartError } = await import('../agents/tools/mcp-servers.js');
    const configs = serverConfigs(workflow, options.base);
    for (const { name } of configs) options.progress({ type: 'setup', id: `mcp ${name}`, state: 'running' });
    try {
      const started = await startMcpServers(configs, options.toolEnv, options.cwd, options.mask);
      toolbox = new McpToolbox(started.listings, started.call, started.close);
    } catch (e) {
      if (e instanceof McpStartError) throw new SetupError(e.message);
      throw e;
    }
    for (const { name } of configs) options.progress({ type: 'setup', id: `mcp ${name}`, state: 'done' });
  }
  try {
    // Compared with the recording on resume: a server whose tools changed is a run that differs.
    if (options.startServers) for (const listing of toolbox.listings) journal.append({ type: 'mcp_tools', server: listing.server, tools: listing.tools });
    const problems = unknownMcpTools(workflow, toolbox);
    if (problems.length) throw new SetupError(problems.map((p) => p.message).join('\n'));
  } catch (e) {
    await toolbox.close();
    throw e;
  }
  return toolbox;
}

/**
 * Every agent's `tools:` entry that names an MCP tool its server does not list, and every two
 * tools an agent would get under one name (`read.file` and `read_file`, or names alike in their
 * first 64 characters: the model could call only one of them), in sentences.
 */
export function unknownMcpTools(workflow: Workflow, toolbox: McpToolbox): { path: (string | number)[]; message: string }[] {
  return Object.entries(workflow.spec.agents).flatMap(([agent, spec]) => {
    const tools = spec.tools ?? [];
    const entries = tools.filter((t) => mcpToolRef(t));
    const unknown = entries.flatMap((t) => {
      const problem = toolbox.problem(t);
      return problem ? [{ path: ['agents', agent, 'tools', tools.indexOf(t)], message: `agents.${agent}.tools: ${problem}` }] : [];
    });
    return [...unknown, ...toolbox.clashes(entries).map((clash) => ({ path: ['agents', agent, 'tools'], message: `agents.${agent}.tools: ${clash}` }))];
  });
}

/** The workflow's servers as they start: env and headers filled from the inputs, timeouts in ms. */
export function serverConfigs(workflow: Workflow, base: Scope): McpServerConfig[] {
  return Object.entries(workflow.spec.mcp_servers ?? {}).map(([name, spec]) => ({
    name,
    command: spec.command,
    args: spec.args,
    url: spec.url,
    env: filled(workflow, base, `mcp_servers.${name}.env`, spec.env),
    headers: filled(workflow, base, `mcp_servers.${name}.headers`, spec.headers),
    timeoutMs: durationMs(spec.timeout ?? DEFAULT_CALL_TIMEOUT),
  }));
}

/** A server's env or headers, each `$<< >>` filled from the inputs (as the workflow's env: is). */
function filled(
  workflow: Workflow,
  base: Scope,
  label: string,
  values: Record<string, string | number | boolean> | undefined,
): Record<string, string> | undefined {
  if (!values) return undefined;
  return Object.fromEntries(
    Object.entries(values).map(([key, value]) => {
      const template = workflow.templates.get(`${label}.${key}`);
      return [key, template ? fillTemplate(template, base) : String(value)];
    }),
  );
}
