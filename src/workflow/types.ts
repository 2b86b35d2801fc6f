import type { ProviderName } from '../provider/clouds.js';
/** The workflow file's data, as schemas/workflow.schema.json allows it. */

export type InputType = 'string' | 'number' | 'integer' | 'boolean';
export type Scalar = string | number | boolean;

export interface InputSpec {
  type: InputType;
  required?: boolean;
  default?: Scalar;
  enum?: Scalar[];
  description?: string;
  secret?: boolean;
  /** Text from outside the team, or not (docs/security.md: untrusted content); the default follows the run's event. */
  trust?: Trust;
}

export type Trust = 'trusted' | 'untrusted';

export interface SetupStepSpec {
  id: string;
  run: string;
  timeout?: string | number;
  max_output?: string | number;
  trust?: Trust;
}

export const WORKSPACE_TOOLS = ['read_file', 'write_file', 'list_files', 'grep', 'run_command', 'annotate'] as const;
export type WorkspaceTool = (typeof WORKSPACE_TOOLS)[number];

export function isWorkspaceTool(name: string): name is WorkspaceTool {
  return (WORKSPACE_TOOLS as readonly string[]).includes(name);
}

/** How long the prompt cache keeps an entry after its last use. */
export type { CacheTtl } from '../provider/pricing.js';
import type { CacheTtl } from '../provider/pricing.js';

export type Effort = 'low' | 'medium' | 'high' | 'xhigh' | 'max';

/** The model settings an agent takes from `defaults` or sets itself. */
export interface ModelSettings {
  /** Where Claude is reached (docs/providers.md). */
  provider?: ProviderName;
  model?: string;
  max_tokens?: number;
  effort?: Effort;
  /** `adaptive`, `off`, or a thinking budget in tokens. */
  thinking?: 'adaptive' | 'off' | number;
  thinking_display?: 'summarized' | 'omitted';
  /** Compact the conversation before a request would pass this many tokens. */
  compact_at?: number;
  /** Its model calls go through the Message Batches API, at half price (docs/workflow.md: batch). */
  batch?: boolean;
  /** Models the API answers a declined request with: up to three, or `default` (docs/api-controls.md). */
  fallbacks?: 'default' | string[];
  /** `auto`: each call tells the model how many tokens its agent has left (docs/api-controls.md). */
  task_budget?: 'auto';
  /** `fast`: the model's fast mode, at its price. */
  speed?: 'standard' | 'fast';
}

export interface AgentSpec extends ModelSettings {
  role: 'manager' | 'worker';
  reports_to?: string;
  description?: string;
  system?: string;
  system_file?: string;
  /** Workspace tools, and MCP tools as SERVER.TOOL, SERVER.pattern* or SERVER. */
  tools?: string[];
  wake?: 'all' | 'each';
  /** Templates whose instances this agent may spawn. */
  spawns?: string[];
  /** One instance per item: a list, or one expression giving a list. */
  for_each?: unknown[] | string;
  /** This agent may fork itself. */
  fork?: boolean;
  queue?: QueueMode;
}

/** What happens to messages that arrive while an agent is in a turn (docs/workflow.md: queue). */
export type QueueMode = 'collect' | 'followup' | 'steer' | 'interrupt';

/** An agent created at run time by `spawn` (docs/workflow.md: templates). */
export interface TemplateSpec extends ModelSettings {
  role?: 'manager' | 'worker';
  description?: string;
  system?: string;
  tools?: string[];
  spawns?: string[];
  fork?: boolean;
  queue?: QueueMode;
  /** Each instance's own limits, unless its spawn gives others. */
  limits?: { max_turns?: number; budget_usd?: number };
}

export interface LimitsSpec {
  timeout?: string | number;
  /** The longest a message batch is waited for (docs/workflow.md: batch). */
  wait_timeout?: string | number;
  max_turns?: number;
  max_turns_per_agent?: number;
  budget_usd?: number;
  max_tokens_total?: number;
  concurrency?: number;
  max_agents?: number;
  max_depth?: number;
}

/** US dollars per million tokens. */
export interface PriceSpec {
  input: number;
  output: number;
  cache_write?: number;
  cache_write_1h?: number;
  cache_read?: number;
}

export interface WorkflowSpec {
  name: string;
  description?: string;
  inputs?: Record<string, InputSpec>;
  env?: Record<string, Scalar>;
  setup?: SetupStepSpec[];
  /** Every agent's provider, unless `defaults` or the agent names another. */
  provider?: ProviderName;
  defaults?: ModelSettings;
  /** Process variables that run_command and MCP servers get, besides the minimal environment. */
  tools_env?: string[];
  mcp_servers?: Record<string, McpServerSpec>;
  edit_github_workflows?: boolean;
  /** What a tainted agent may change outside the run (docs/security.md: untrusted content); default gate. */
  untrusted?: 'gate' | 'allow';
  /** People who may vote on proposals (docs/workflow.md: votes from people). */
  people?: PeopleSpec;
  sandbox?: 'auto' | 'required' | 'off' | { mode?: 'auto' | 'required' | 'off'; network?: boolean };
  limits?: LimitsSpec;
  pricing?: Record<string, PriceSpec>;
  /** Rubric graders: a model scores the run against each rubric when its team has stopped (docs/graders.md). */
  graders?: Record<string, { rubric: string; model?: string }>;
  /** The API's rate limits per minute, by model class (docs/organisation.md). */
  rate_limits?: Record<string, { rpm?: number; itpm?: number; otpm?: number }>;
  agents: Record<string, AgentSpec>;
  templates?: Record<string, TemplateSpec>;
  /** What the whole team reads, first in every system prompt (docs/workflow.md: sharing the prompt cache). */
  context?: string;
  cache?: { ttl?: CacheTtl };
  /** Shared documents with an owner (docs/workflow.md: documents). */
  documents?: Record<string, DocumentDecl>;
  kickoff: string;
  /** An expression, or a typed declaration (a JSON Schema fragment) the lead fills. */
  outputs?: Record<string, string | TypedOutput>;
}

/** `people:`: the GitHub users (`@login`) and teams (`@org/team`) a proposal may name as voters. */
export interface PeopleSpec {
  voters: string[];
  rule?: 'plurality' | 'majority' | 'unanimous';
  deadline?: string | number;
  /** Proposal ids only these people decide (docs/workflow.md: decisions that are people's). */
  decide?: string[];
}

/** A document of `documents:`: its owner, its first text (`text` or `file`), its mode, and where its final text goes. */
export interface DocumentDecl {
  owner: string;
  text?: string;
  file?: string;
  mode?: 'edit' | 'append';
  write_to?: string;
}

/** A typed output: a JSON Schema (2020-12) fragment with a `type`. */
export interface TypedOutput {
  type: string | string[];
  description?: string;
  [keyword: string]: unknown;
}

/** An MCP server (docs/design.md: MCP servers): a program on stdio, or a streamable HTTP endpoint. */
export interface McpServerSpec {
  command?: string;
  args?: string[];
  env?: Record<string, string | number | boolean>;
  url?: string;
  headers?: Record<string, string>;
  timeout?: string | number;
}
