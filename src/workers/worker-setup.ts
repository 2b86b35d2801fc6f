import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import type { AgentTool, ToolContext, ToolResult } from '../agents/tools/tool.js';
import { WORKSPACE_TOOL_BY_NAME } from '../agents/tools/workspace-tools.js';
import { Workspace } from '../agents/tools/workspace-root.js';
import { toolEnvironment } from '../agents/tools/tool-env.js';
import { missingRequiredSandbox, sandboxPlan, type SandboxPlan } from '../agents/tools/sandbox.js';
import { CALL_RETRIES, Provider, REQUEST_TIMEOUT_MS } from '../provider/client.js';
import { PROVIDERS, type ProviderName } from '../provider/clouds.js';
import { connect } from '../provider/connect.js';
import { credentialPaths } from '../provider/credential-names.js';
import { loadWorkflow } from '../workflow/load.js';
import { toolsGiven } from '../workflow/tool-names.js';
import { providersOf } from '../workflow/providers-used.js';
import type { Pacer } from '../provider/rates/pacer.js';
import type { WorkflowSpec } from '../workflow/types.js';
import { isWorkspaceTool } from '../workflow/types.js';
import type { TurnJob } from './wire.js';

/** What a worker runs a turn's operations with: the run's model provider, and its workspace tools. */
export interface TurnSetup {
  provider: Provider;
  runTool(agent: string, name: string, input: unknown, signal: AbortSignal): Promise<ToolResult>;
}

export interface WorkerPlace {
  workspace: string;
  env: NodeJS.ProcessEnv;
  version: string;
  warn(message: string): void;
  /** The pacing of this worker's calls under the API's rate limits (the workflow's, the flags', or shared through --coordinate). */
  pacerFor(spec: WorkflowSpec): Promise<{ pacer: Pacer; close(): Promise<void> }>;
}

/**
 * Sets a worker up for a job, or says why it refuses it: another conclave version, a workflow
 * that is not the coordinator's, a sandbox or credentials it cannot have. A workflow and its
 * providers are set up once; the tools' environment is the job's.
 */
export class WorkerSetups {
  private readonly byWorkflow = new Map<
    string,
    Promise<{ spec: WorkflowSpec; tools: Set<string>; provider: Provider; workspace: Workspace; sandbox: SandboxPlan; providers: ProviderName[] }>
  >();

  private readonly closers: (() => Promise<void>)[] = [];

  constructor(private readonly place: WorkerPlace) {}

  /** The stores the pacing was kept in, closed. */
  async close(): Promise<void> {
    await Promise.all(this.closers.map((close) => close().catch(() => {})));
  }

  async setupFor(job: TurnJob): Promise<TurnSetup | { refused: string }> {
    const { version, workspace: root } = this.place;
    if (job.version !== version)
      return { refused: `it comes from conclave ${job.version}, and this worker is conclave ${version}: run the same version on both sides` };
    const file = resolve(root, job.workflow.path);
    const inside = relative(root, file);
    if (isAbsolute(job.workflow.path) || inside.startsWith('..') || isAbsolute(inside) || !/\.ya?ml$/i.test(file)) {
      return { refused: `its workflow path ${JSON.stringify(job.workflow.path)} is not a .yml file inside this worker's workspace` };
    }
    if (!existsSync(file) || !statSync(file).isFile())
      return { refused: `its workflow ${job.workflow.path} is not in this worker's workspace (${root}): check out the same commit as the coordinator` };
    const sha256 = createHash('sha256').update(readFileSync(file, 'utf8')).digest('hex');
    if (sha256 !== job.workflow.sha256) {
      return {
        refused:
          `its workflow ${job.workflow.path} is not this worker's (sha256 ${job.workflow.sha256.slice(0, 12)} on the coordinator, ` +
          `${sha256.slice(0, 12)} here): check out the same commit`,
      };
    }
    const { providers } = job;
    const key = `${sha256} ${providers.join(',')}`;
    if (!this.byWorkflow.has(key)) this.byWorkflow.set(key, this.load(file, providers));
    let setup: Awaited<NonNullable<ReturnType<typeof this.byWorkflow.get>>>;
    try {
      setup = await this.byWorkflow.get(key)!;
    } catch (e) {
      this.byWorkflow.delete(key);
      return { refused: (e as Error).message };
    }
    // The values the run filled in, of the keys this worker's own workflow declares: a job sets no other variable.
    const declared = Object.fromEntries(Object.entries(job.env).filter(([key]) => Object.hasOwn(setup.spec.env ?? {}, key)));
    // The providers of this worker's own copy of the workflow and those of the (authenticated) job: a job can only add to them.
    const env = toolEnvironment(this.place.env, declared, setup.spec.tools_env ?? [], [...new Set([...providersOf(setup.spec), ...providers])]);
    return {
      provider: setup.provider,
      runTool: async (agent, name, input, signal) => {
        // Only what this worker's own copy of the workflow gives some agent: a forged operation runs nothing else.
        const tool: AgentTool | undefined = isWorkspaceTool(name) && setup.tools.has(name) ? WORKSPACE_TOOL_BY_NAME[name] : undefined;
        if (!tool) return { content: `Not run: no agent of this workflow has the workspace tool "${name}".`, isError: true };
        const context = { agent, workspace: setup.workspace, env, sandbox: setup.sandbox, signal, complete: () => {} } as Omit<
          ToolContext,
          'channel'
        > as ToolContext;
        return tool.run(typeof input === 'object' && input !== null ? (input as Record<string, unknown>) : {}, context);
      },
    };
  }

  private async load(file: string, providers: ProviderName[]) {
    const { workflow, diagnostics } = await loadWorkflow(file);
    const error = diagnostics.find((d) => d.severity === 'error');
    if (!workflow || error) throw new Error(`its workflow does not load here: ${error?.message ?? 'unknown error'}`);
    const { spec } = workflow;
    const tools = toolsGiven(spec);
    const usesRunCommand = tools.has('run_command');
    const missing = missingRequiredSandbox(spec.sandbox, usesRunCommand);
    if (missing) throw new Error(missing);
    // Every cloud's credentials on this machine are hidden from tools, not only those of the providers a job names.
    const credentials = credentialPaths(this.place.env, PROVIDERS);
    const root = this.place.workspace;
    const sandbox = sandboxPlan(spec.sandbox, root, { githubWorkflows: spec.edit_github_workflows === true, files: [], hidden: credentials });
    if (usesRunCommand && !sandbox.wrap && spec.sandbox !== 'off') this.place.warn(`${sandbox.why}: run_command runs without a sandbox on this worker`);
    const connections = await Promise.all(providers.map((p) => connect(p, this.place.env)));
    const organisation = await this.place.pacerFor(spec);
    this.closers.push(() => organisation.close());
    return {
      spec,
      tools,
      providers,
      sandbox,
      workspace: new Workspace(root, { protect: [], secret: credentials.files, githubWorkflows: spec.edit_github_workflows === true }),
      provider: new Provider({ connections, maxRetries: CALL_RETRIES, requestTimeoutMs: REQUEST_TIMEOUT_MS, pacer: organisation.pacer }),
    };
  }
}
