import { contextSharingWarnings, sharedPromptWarnings } from './shared-prompt.js';
import { UsageError } from '../conclave-error.js';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { byPosition, hasErrors, type Diagnostic } from './diagnostic.js';
import { buildGraph, type AgentEntry, type TeamGraph } from './graph.js';
import { maxAgentsOf, resolveLimits, type Limits } from './limits.js';
import { textInFile, textInSource, type LocatedTemplate, type LocatedText } from './located.js';
import { graderProblems } from './grader-checks.js';
import { documentProblems } from './document-checks.js';
import { outputProblems } from './typed-outputs.js';
import { mcpServerProblems, toolNameProblems, toolsGiven } from './tool-names.js';
import {
  compactAtProblems,
  durationProblems,
  inputProblems,
  isRecord,
  modelFormWarnings,
  peopleProblems,
  recordOf,
  setupIdProblems,
  thinkingProblems,
  toolsEnvProblems,
} from './value-checks.js';
import { schemaErrors } from './schema-check.js';
import { batchProblems, fallbackProblems, usesBatches } from './api-checks.js';
import { WorkflowSource, type Path } from './source.js';
import { quote } from './suggest.js';
import { forEachProblems, madeAtRun, spawnProblems } from './spawn-checks.js';
import { collectTemplates, strayExpressions } from './interpolated.js';
import type { WorkflowSpec } from './types.js';

/** A text that is interpolated, with its parsed template. */
export type { LocatedTemplate } from './located.js';

/** A workflow file that passed every check. */
export interface Workflow {
  /** The path as the user gave it. */
  file: string;
  /** The file's text, as read. */
  text: string;
  spec: WorkflowSpec;
  graph: TeamGraph;
  limits: Limits;
  /** Each agent's own instructions (from `system` or `system_file`), not yet interpolated. */
  system: Record<string, LocatedTemplate | undefined>;
  /** Every interpolated text, by label (`kickoff`, `setup[0].run`, `outputs.verdict`, …). */
  templates: Map<string, LocatedTemplate>;
  /** The kickoff, system prompts and descriptions: where agents are mentioned by name. */
  prompts: LocatedText[];
  /** Every tool some agent or template is given (tool-names.ts): read once, by the sandbox check at load and by setup. */
  tools: ReadonlySet<string>;
  /** Whether any agent or template makes its calls through Message Batches (`batch: true`, its own or the defaults'). */
  batched: boolean;
  /** How many agents the team may hold, spawned and for_each instances included (`limits.max_agents`, or its default). */
  maxAgents: number;
}

export interface LoadResult {
  workflow?: Workflow;
  /** Errors and warnings, in file order. */
  diagnostics: Diagnostic[];
  /**
   * For mention checks, even when there are errors: the prompts read, the agents' names, the
   * templates and `for_each` agents (whose instances, `NAME-1` …, the run makes).
   */
  prompts: LocatedText[];
  agents: string[];
  madeAtRun: string[];
}

/** The workflow file itself could not be read. */
export class WorkflowFileError extends UsageError {}

/** The deepest a workflow's values may nest: the checks that walk them recurse, and no workflow comes near it. */
export const MAX_DEPTH = 64;

/** The path of the first value nested deeper than MAX_DEPTH, found without recursion; or undefined. */
function tooDeep(data: unknown): Path | undefined {
  const stack: { value: unknown; path: Path }[] = [{ value: data, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (path.length > MAX_DEPTH) return path;
    if (Array.isArray(value)) value.forEach((item, i) => stack.push({ value: item, path: [...path, i] }));
    else if (isRecord(value)) for (const [key, item] of Object.entries(value)) stack.push({ value: item, path: [...path, key] });
  }
  return undefined;
}

export async function loadWorkflow(file: string, options: { provider?: string } = {}): Promise<LoadResult> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new WorkflowFileError(`cannot read ${file}: ${reason(e)}`);
  }
  const result = await checkWorkflow(file, text, options.provider);
  result.diagnostics.sort(byPosition);
  return result;
}

async function checkWorkflow(file: string, text: string, provider?: string): Promise<LoadResult> {
  const source = new WorkflowSource(file, text);
  const syntax = source.syntaxErrors();
  const none = { prompts: [], agents: [], madeAtRun: [] };
  if (syntax.length > 0) return { diagnostics: syntax, ...none };
  let data: unknown;
  try {
    data = source.doc.toJS({ maxAliasCount: 1000 });
  } catch (e) {
    return { diagnostics: [source.error({ line: 1, col: 1 }, `the YAML cannot be read: ${reason(e)}`)], ...none };
  }
  if (data === null || data === undefined) {
    return { diagnostics: [source.error({ line: 1, col: 1 }, 'the file is empty; a workflow needs at least name, agents and kickoff')], ...none };
  }
  const deep = tooDeep(data);
  if (deep)
    return {
      diagnostics: [
        source.error(
          source.keyPosition(deep),
          `${deep.slice(0, 3).join('.')}… is nested more than ${MAX_DEPTH} levels deep: a workflow never needs that many; flatten it`,
        ),
      ],
      ...none,
    };
  const diagnostics = await schemaErrors(source, data);
  if (!isRecord(data)) return { diagnostics, ...none };
  const spec = data as unknown as WorkflowSpec;

  diagnostics.push(...inputProblems(source, spec));
  diagnostics.push(...setupIdProblems(source, spec));
  diagnostics.push(
    ...durationProblems(source, spec),
    ...thinkingProblems(source, spec),
    ...compactAtProblems(source, spec),
    ...batchProblems(source, spec, provider),
    ...fallbackProblems(source, spec, provider),
    ...documentProblems(source, spec),
    ...graderProblems(source, spec),
    ...peopleProblems(source, spec),
    ...toolsEnvProblems(source, spec),
    ...modelFormWarnings(source, spec),
  );
  diagnostics.push(
    ...outputProblems(source, spec),
    ...toolNameProblems(source, spec),
    ...mcpServerProblems(source, spec),
    ...spawnProblems(source, spec),
    ...forEachProblems(source, spec),
  );
  const system = systemTexts(source, spec, diagnostics);
  const templates = collectTemplates(source, spec, system, diagnostics);
  diagnostics.push(...strayExpressions(source, data, templates), ...sharedPromptWarnings(source, spec, templates), ...contextSharingWarnings(source, spec));
  const graph = graphOf(source, spec, diagnostics);

  // A document's text is read with read_document, never posted: a mention in it routes nothing.
  const prompts = [...templates.values()].filter((t) => t.field === 'prompt' && !t.label.startsWith('documents.'));
  const named = { agents: Object.keys(recordOf(spec.agents)), madeAtRun: madeAtRun(spec) };
  if (hasErrors(diagnostics) || !graph) return { diagnostics, prompts, ...named };
  const systemTemplates = Object.fromEntries(Object.keys(spec.agents).map((name) => [name, templates.get(system.get(name)?.label ?? '')]));
  return {
    diagnostics,
    prompts,
    ...named,
    workflow: {
      file,
      text,
      spec,
      graph,
      limits: resolveLimits(spec.limits),
      system: systemTemplates,
      templates,
      prompts,
      tools: toolsGiven(spec),
      batched: usesBatches(spec),
      maxAgents: maxAgentsOf(spec),
    },
  };
}

function systemTexts(source: WorkflowSource, spec: WorkflowSpec, diagnostics: Diagnostic[]): Map<string, LocatedText> {
  const texts = new Map<string, LocatedText>();
  for (const [name, agent] of Object.entries(recordOf(spec.agents))) {
    if (!isRecord(agent)) continue;
    const path = ['agents', name];
    if (typeof agent.system === 'string' && agent.system_file !== undefined) {
      diagnostics.push(source.error(source.keyPosition([...path, 'system_file']), `agent "${name}" has both system and system_file; keep one`));
    } else if (typeof agent.system === 'string') {
      texts.set(name, textInSource(source, [...path, 'system'], `agents.${name}.system`, agent.system));
    } else if (typeof agent.system_file === 'string' && agent.system_file !== '') {
      const file = join(dirname(source.file), agent.system_file);
      try {
        texts.set(name, textInFile(file, `agents.${name}.system_file`, readFileSync(file, 'utf8')));
      } catch (e) {
        diagnostics.push(source.error(source.valuePosition([...path, 'system_file']), `cannot read system_file ${quote(agent.system_file)}: ${reason(e)}`));
      }
    }
  }
  return texts;
}

function graphOf(source: WorkflowSource, spec: WorkflowSpec, diagnostics: Diagnostic[]): TeamGraph | undefined {
  if (!isRecord(spec.agents)) return undefined;
  const entries: AgentEntry[] = [];
  // An agent whose role the schema refused is taken for a manager, so that the rest of the graph
  // is still checked in the same pass; problems of its own are left to the schema's message.
  const unsure = new Set<string>();
  for (const [name, agent] of Object.entries(spec.agents)) {
    if (!isRecord(agent)) return undefined;
    const known = agent.role === 'manager' || agent.role === 'worker';
    if (!known) unsure.add(name);
    entries.push({
      name,
      role: known ? (agent.role as AgentEntry['role']) : 'manager',
      reports_to: typeof agent.reports_to === 'string' ? agent.reports_to : undefined,
    });
  }
  if (entries.length === 0) return undefined;
  const { graph, problems } = buildGraph(entries);
  for (const p of problems) {
    if (unsure.has(p.agent)) continue;
    const position =
      p.site === 'reports_to'
        ? source.valuePosition(['agents', p.agent, 'reports_to'])
        : p.site === 'agents'
          ? source.keyPosition(['agents'])
          : source.keyPosition(['agents', p.agent]);
    diagnostics.push(source.error(position, p.message));
  }
  return unsure.size > 0 ? undefined : graph;
}

function reason(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'EACCES') return 'permission denied';
  return e instanceof Error ? e.message : String(e);
}
