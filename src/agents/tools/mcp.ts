import { didYouMean } from '../../workflow/suggest.js';
import type { AgentTool, ToolResult } from './tool.js';
import { cap } from './workspace.js';

/** One tool of an MCP server, as the session records it (so that --replay needs no server). */
export interface McpToolListing {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  /** The server marks it `readOnlyHint`: an interrupted call may be run again on resume. */
  read_only: boolean;
}

export interface McpListing {
  server: string;
  tools: McpToolListing[];
}

export type McpCall = (server: string, tool: string, args: Record<string, unknown>, signal: AbortSignal) => Promise<ToolResult>;

/** What the model calls an MCP tool: `SERVER__TOOL`, in the characters tool names may use. */
export function mcpToolName(server: string, tool: string): string {
  return `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

/**
 * The MCP tools of a run: the servers' listings, and how to call them (absent in a replay, whose
 * results all come from the recording). `toolsFor` resolves a `tools:` entry: `SERVER.TOOL`,
 * `SERVER.pattern*` (a glob) or `SERVER`.
 */
export class McpToolbox {
  private readonly tools = new Map<string, AgentTool>();

  constructor(
    readonly listings: readonly McpListing[],
    private readonly call: McpCall | undefined,
    private readonly closeAll: () => Promise<void> = async () => {},
  ) {}

  toolsFor(entry: string): AgentTool[] {
    return this.listedFor(entry).map(({ server, tool }) => this.tool(server, tool));
  }

  /** The listed tools a `tools:` entry names. */
  private listedFor(entry: string): { server: string; tool: McpToolListing }[] {
    const dot = entry.indexOf('.');
    const server = dot === -1 ? entry : entry.slice(0, dot);
    const pattern = dot === -1 ? '*' : entry.slice(dot + 1);
    const matches = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
    const listing = this.listings.find((l) => l.server === server);
    return (listing?.tools ?? []).filter((t) => matches.test(t.name)).map((tool) => ({ server, tool }));
  }

  /** Why a `tools:` entry is of no use, or undefined: its server lists no such tool. */
  problem(entry: string): string | undefined {
    if (this.toolsFor(entry).length > 0) return undefined;
    const server = entry.split('.')[0]!;
    const names = this.listings.find((l) => l.server === server)?.tools.map((t) => t.name) ?? [];
    const asked = entry.slice(server.length + 1);
    const near = asked && !asked.includes('*') ? didYouMean(asked, names).replace(/"([^"]+)"/, `"${server}.$1"`) : '';
    return `"${entry}" matches no tool of the MCP server "${server}"${near}; its tools are ${names.join(', ') || '(none)'}`;
  }

  /** Tools that `entries` would give under one model-facing name, in sentences. */
  clashes(entries: readonly string[]): string[] {
    const byName = new Map<string, Set<string>>();
    for (const { server, tool } of entries.flatMap((entry) => this.listedFor(entry))) {
      const name = mcpToolName(server, tool.name);
      byName.set(name, (byName.get(name) ?? new Set()).add(`${server}.${tool.name}`));
    }
    return [...byName]
      .filter(([, tools]) => tools.size > 1)
      .map(([name, tools]) => `${[...tools].join(' and ')} would both reach the model as ${name}, which can call only one of them: name the one it needs`);
  }

  close(): Promise<void> {
    return this.closeAll();
  }

  private tool(server: string, listing: McpToolListing): AgentTool {
    const name = mcpToolName(server, listing.name);
    let tool = this.tools.get(name);
    if (!tool) {
      const call = this.call;
      tool = {
        readOnly: listing.read_only,
        external: true,
        definition: {
          name,
          description: listing.description || `${listing.name} of the MCP server ${server}`,
          input_schema: listing.input_schema as AgentTool['definition']['input_schema'],
        },
        run: async (input, { signal }) => {
          if (!call) return { content: `The MCP server ${server} is not running in a replay, and this call was not recorded.`, isError: true };
          const result = await call(server, listing.name, input, signal);
          return { ...result, content: cap(result.content) };
        },
      };
      this.tools.set(name, tool);
    }
    return tool;
  }
}
