import { withinTime } from '../../provider/time-limit.js';
import { ConclaveError } from '../../conclave-error.js';
import type { McpCall, McpListing } from './mcp.js';
import { COOKIE_NAME, newCookie, sweep } from './process-sweep.js';
import type { ToolResult } from './tool.js';

/** An MCP server of the workflow, its `$<< >>` filled in. */
export interface McpServerConfig {
  name: string;
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  url?: string;
  headers?: Record<string, string>;
  /** The longest one tool call may take. */
  timeoutMs: number;
}

/** A server did not start, or would not list its tools: the run stops before any model call. */
export class McpStartError extends ConclaveError {
  constructor(
    message: string,
    /** The server's name under mcp_servers. */
    readonly server: string,
  ) {
    super(message);
  }
}

/** The longest a server may take to start and answer `initialize`. */
const START_TIMEOUT_MS = 30_000;

interface Connected {
  client: import('@modelcontextprotocol/sdk/client/index.js').Client;
  timeoutMs: number;
}

/**
 * Starts every server (docs/design.md: MCP servers): a program with the minimal tool environment plus its `env:`
 * (`baseEnv` is that minimal environment), or an HTTP endpoint. Lists their tools. The MCP SDK
 * loads only here, for a workflow that declares servers. `mask` hides secrets in results.
 */
export async function startMcpServers(
  configs: readonly McpServerConfig[],
  baseEnv: NodeJS.ProcessEnv,
  cwd: string,
  mask: (text: string) => string,
): Promise<{ listings: McpListing[]; call: McpCall; close(): Promise<void> }> {
  const [{ Client }, { StdioClientTransport }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  const connected = new Map<string, Connected>();
  // The servers' environment carries a cookie: what they started, even in a session of its own
  // and deaf to SIGTERM, is killed with them.
  const cookie = newCookie();
  const close = async () => {
    await Promise.all([...connected.values()].map((c) => c.client.close().catch(() => {})));
    sweep(cookie);
  };
  const listings: McpListing[] = [];
  try {
    for (const config of configs) {
      const client = new Client({ name: 'conclave', version: '1' });
      let stderr = '';
      const transport = config.command
        ? new StdioClientTransport({
            command: config.command,
            args: config.args ?? [],
            env: { ...stringEnv(baseEnv), ...config.env, [COOKIE_NAME]: cookie },
            cwd,
            stderr: 'pipe',
          })
        : new StreamableHTTPClientTransport(new URL(config.url!), { requestInit: { headers: config.headers ?? {} } });
      if (transport instanceof StdioClientTransport) transport.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
      try {
        await withinTime(client.connect(transport), START_TIMEOUT_MS, `did not answer within ${START_TIMEOUT_MS / 1000} s`);
        connected.set(config.name, { client, timeoutMs: config.timeoutMs });
        listings.push({ server: config.name, tools: await listTools(client) });
      } catch (e) {
        await client.close().catch(() => {});
        sweep(cookie);
        const what = config.command ? `${config.command} ${(config.args ?? []).join(' ')}`.trim() : config.url;
        const output = mask(stderr.trim());
        throw new McpStartError(`the MCP server "${config.name}" (${what}) did not start: ${mask(messageOf(e))}${output ? `\n${output}` : ''}`, config.name);
      }
    }
  } catch (e) {
    await close();
    throw e;
  }
  const call: McpCall = async (server, tool, args, signal) => {
    const c = connected.get(server)!;
    try {
      const result = resultOf((await c.client.callTool({ name: tool, arguments: args }, undefined, { timeout: c.timeoutMs, signal })) as CallResult);
      return { ...result, content: mask(result.content) };
    } catch (e) {
      if (signal.aborted) throw e;
      const timedOut = (e as { code?: number }).code === -32001;
      return {
        content: timedOut ? `${tool} did not answer within ${c.timeoutMs / 1000} s: the call was stopped` : `${tool} failed: ${mask(messageOf(e))}`,
        isError: true,
      };
    }
  };
  return { listings, call, close };
}

async function listTools(client: Connected['client']): Promise<McpListing['tools']> {
  const tools: McpListing['tools'] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    for (const t of page.tools) {
      tools.push({
        name: t.name,
        description: t.description ?? '',
        input_schema: t.inputSchema as Record<string, unknown>,
        read_only: t.annotations?.readOnlyHint === true,
      });
    }
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

interface CallResult {
  content?: { type: string; text?: string; mimeType?: string; data?: string; uri?: string; resource?: { uri?: string; text?: string } }[];
  structuredContent?: unknown;
  isError?: boolean;
}

/** A tool's result as text for the model: text as it is, other blocks described in a line. */
function resultOf(result: CallResult): ToolResult {
  const parts = (result.content ?? []).map((b) => {
    if (b.type === 'text') return b.text ?? '';
    if (b.type === 'resource') return b.resource?.text ?? `[resource ${b.resource?.uri ?? ''}]`;
    if (b.type === 'resource_link') return `[link ${b.uri ?? ''}]`;
    return `[${b.type}${b.mimeType ? ` ${b.mimeType}` : ''}, ${b.data?.length ?? 0} characters of base64]`;
  });
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  return { content: parts.join('\n'), ...(result.isError ? { isError: true } : {}) };
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
