import type { Diagnostic } from './diagnostic.js';
import type { WorkflowSource } from './source.js';
import { didYouMean } from './suggest.js';
import { WORKSPACE_TOOLS, type WorkflowSpec } from './types.js';
import { isRecord, recordOf } from './value-checks.js';

/** A `tools:` entry that names an MCP server's tools: `SERVER.TOOL`, `SERVER.pattern*` or `SERVER`. */
export function mcpToolRef(entry: string): { server: string; pattern: string } | undefined {
  if ((WORKSPACE_TOOLS as readonly string[]).includes(entry)) return undefined;
  const dot = entry.indexOf('.');
  return dot === -1 ? { server: entry, pattern: '*' } : { server: entry.slice(0, dot), pattern: entry.slice(dot + 1) };
}

/** Every tool some agent or template is given: what run_command's sandbox, and a worker, must allow for. */
export function toolsGiven(spec: WorkflowSpec): Set<string> {
  return new Set([...Object.values(spec.agents), ...Object.values(spec.templates ?? {})].flatMap((a) => a.tools ?? []));
}

/** Each agent's `tools:` entries: a workspace tool, or a server of `mcp_servers` (its tools are checked when it starts). */
export function toolNameProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const servers = Object.keys(recordOf(spec.mcp_servers));
  const out: Diagnostic[] = [];
  const entries = (['agents', 'templates'] as const).flatMap((section) =>
    Object.entries(recordOf(spec[section])).map(([name, agent]) => [section, name, agent] as const),
  );
  for (const [section, name, agent] of entries) {
    if (!isRecord(agent) || !Array.isArray(agent.tools)) continue;
    agent.tools.forEach((entry, i) => {
      if (typeof entry !== 'string') return;
      const ref = mcpToolRef(entry);
      if (!ref || servers.includes(ref.server)) return;
      const known = WORKSPACE_TOOLS.map((t) => `"${t}"`).join(', ');
      const also = servers.length ? `, or name a server of mcp_servers (${servers.join(', ')})` : '';
      const hint = didYouMean(entry.includes('.') ? ref.server : entry, entry.includes('.') ? servers : [...WORKSPACE_TOOLS, ...servers]);
      const what = entry.includes('.')
        ? `names the server "${ref.server}", which mcp_servers does not declare${hint}`
        : `must be one of ${known}${also}; found the string "${entry}"${hint}`;
      out.push(source.error(source.valuePosition([section, name, 'tools', i]), `${section}.${name}.tools[${i}] ${what}`));
    });
  }
  return out;
}

/** Each server is a program (command, args, env) or an endpoint (url, headers), not both. */
export function mcpServerProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const [name, server] of Object.entries(recordOf(spec.mcp_servers))) {
    if (!isRecord(server)) continue;
    const at = source.keyPosition(['mcp_servers', name]);
    if (server.command === undefined && server.url === undefined)
      out.push(source.error(at, `mcp_servers.${name} needs command (a program on stdio) or url (a streamable HTTP endpoint)`));
    else if (server.command !== undefined && server.url !== undefined)
      out.push(source.error(at, `mcp_servers.${name} has both command and url: a server is one or the other`));
    else if (server.url !== undefined && (server.args !== undefined || server.env !== undefined))
      out.push(source.error(at, `mcp_servers.${name} has a url: args and env are for a command`));
    else if (server.command !== undefined && server.headers !== undefined)
      out.push(source.error(at, `mcp_servers.${name} has a command: headers are for a url`));
  }
  return out;
}
