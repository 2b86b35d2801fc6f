import { sharedPromptWarnings } from './shared-prompt.js';
import { UsageError } from '../conclave-error.js';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { byPosition, hasErrors, type Diagnostic } from './diagnostic.js';
import { buildGraph, type AgentEntry, type TeamGraph } from './graph.js';
import { resolveLimits, type Limits } from './limits.js';
import { textInFile, textInSource, type LocatedTemplate, type LocatedText } from './located.js';
import { checkReferences, type Field } from './references.js';
import { documentProblems } from './document-checks.js';
import { outputProblems } from './typed-outputs.js';
import { mcpServerProblems, toolNameProblems } from './tool-names.js';
import {
  batchProblems,
  compactAtProblems,
  durationProblems,
  inputProblems,
  isRecord,
  modelFormWarnings,
  recordOf,
  setupIdProblems,
  thinkingProblems,
  toolsEnvProblems,
} from './value-checks.js';
import { labelOf, schemaErrors } from './schema-check.js';
import { WorkflowSource, type Path } from './source.js';
import { quote } from './suggest.js';
import { parseTemplate } from './template.js';
import { forEachProblems, madeAtRun, spawnProblems } from './spawn-checks.js';
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

const FIELDS_WITH_EXPRESSIONS = 'env, setup run, agent system and description, context, document text, kickoff and outputs';

export function loadWorkflow(file: string, options: { provider?: string } = {}): LoadResult {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new WorkflowFileError(`cannot read ${file}: ${reason(e)}`);
  }
  const result = checkWorkflow(file, text, options.provider);
  result.diagnostics.sort(byPosition);
  return result;
}

function checkWorkflow(file: string, text: string, provider?: string): LoadResult {
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
  const diagnostics = schemaErrors(source, data);
  if (!isRecord(data)) return { diagnostics, ...none };
  const spec = data as unknown as WorkflowSpec;

  diagnostics.push(...inputProblems(source, spec));
  diagnostics.push(...setupIdProblems(source, spec));
  diagnostics.push(
    ...durationProblems(source, spec),
    ...thinkingProblems(source, spec),
    ...compactAtProblems(source, spec),
    ...batchProblems(source, spec, provider),
    ...documentProblems(source, spec),
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
  diagnostics.push(...strayExpressions(source, data, templates), ...sharedPromptWarnings(source, spec, templates));
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

function collectTemplates(
  source: WorkflowSource,
  spec: WorkflowSpec,
  system: Map<string, LocatedText>,
  diagnostics: Diagnostic[],
): Map<string, LocatedTemplate> {
  const templates = new Map<string, LocatedTemplate>();
  const inputs = Object.keys(recordOf(spec.inputs));
  const setupIds = (Array.isArray(spec.setup) ? spec.setup : []).map((s) => (isRecord(s) ? String(s.id) : ''));
  const agents = Object.keys(recordOf(spec.agents));
  const documents = Object.keys(recordOf(spec.documents));

  const add = (located: LocatedText, field: Field, setupIndex?: number, item = false) => {
    const { parts, errors } = parseTemplate(located.text);
    for (const e of errors) {
      diagnostics.push(at(located, e.start, e.end, e.at, e.message));
    }
    for (const part of parts) {
      if (part.kind !== 'expr') continue;
      for (const e of checkReferences(part.expr, { field, inputs, setupIds, setupIndex, agents, documents, item })) {
        diagnostics.push(at(located, part.start, part.end, part.exprStart + e.offset, e.message));
      }
      if (field === 'setup' && insideDoubleQuotes(located.text, part.start)) {
        const { line, col } = at(located, part.start, part.end, part.start, '');
        const written = located.text.slice(part.start, part.end);
        diagnostics.push(
          source.warning(
            { line, col },
            `${written} stands inside double quotes: its value reaches the shell single-quoted, so that it stays data, and those quotes show (a value 42 ` +
              `prints as '42'); close the double quotes around it: "…"${written}"…"`,
          ),
        );
      }
    }
    templates.set(located.label, { ...located, field, parts });
  };
  const addValue = (path: Path, field: Field, value: unknown, setupIndex?: number, item = false) => {
    if (typeof value === 'string') add(textInSource(source, path, labelOf(path), value), field, setupIndex, item);
  };

  for (const [key, value] of Object.entries(recordOf(spec.env))) addValue(['env', key], 'env', value);
  for (const [name, server] of Object.entries(recordOf(spec.mcp_servers))) {
    if (!isRecord(server)) continue;
    for (const part of ['env', 'headers'] as const)
      for (const [key, value] of Object.entries(recordOf(server[part]))) addValue(['mcp_servers', name, part, key], 'env', value);
  }
  (Array.isArray(spec.setup) ? spec.setup : []).forEach((step, i) => {
    if (isRecord(step)) addValue(['setup', i, 'run'], 'setup', step.run, i);
  });
  for (const [name, agent] of Object.entries(recordOf(spec.agents))) {
    const item = isRecord(agent) && agent.for_each !== undefined;
    const text = system.get(name);
    if (text) add(text, 'prompt', undefined, item);
    if (!isRecord(agent)) continue;
    addValue(['agents', name, 'description'], 'prompt', agent.description, undefined, item);
    addValue(['agents', name, 'for_each'], 'prompt', agent.for_each);
  }
  for (const [name, template] of Object.entries(recordOf(spec.templates))) {
    for (const field of ['system', 'description'] as const) if (isRecord(template)) addValue(['templates', name, field], 'prompt', template[field]);
  }
  addValue(['context'], 'prompt', spec.context);
  for (const [name, document] of Object.entries(recordOf(spec.documents)))
    if (isRecord(document)) addValue(['documents', name, 'text'], 'prompt', document.text);
  addValue(['kickoff'], 'prompt', spec.kickoff);
  for (const [key, value] of Object.entries(recordOf(spec.outputs))) addValue(['outputs', key], 'outputs', value);
  return templates;
}

/** Whether offset `at` of a shell line stands inside double quotes ("…", not '…' or after a backslash). */
function insideDoubleQuotes(text: string, at: number): boolean {
  let double = false;
  let single = false;
  for (let i = 0; i < at; i++) {
    const c = text[i];
    if (c === '\\' && !single) i++;
    else if (c === "'" && !double) single = !single;
    else if (c === '"' && !single) double = !double;
  }
  return double;
}

function at(located: LocatedText, start: number, end: number, offset: number, message: string): Diagnostic {
  return { file: located.file, ...located.locate(start, end, offset), severity: 'error', message };
}

/** `$<< … >>` written in a value that is never interpolated, such as a model name. */
function strayExpressions(source: WorkflowSource, data: unknown, templates: Map<string, LocatedTemplate>): Diagnostic[] {
  const out: Diagnostic[] = [];
  const walk = (value: unknown, path: (string | number)[]) => {
    if (typeof value === 'string') {
      const label = labelOf(path);
      const github = value.indexOf('${{');
      if (github !== -1) {
        const position = source.positionInValue(path, value, github, github + 3, github);
        out.push(
          source.warning(
            position,
            `\${{ }} is GitHub Actions' syntax, which nothing evaluates inside a workflow file: write $<< … >> (such as $<< inputs.NAME >>)`,
          ),
        );
      }
      if (templates.has(label) || path[path.length - 1] === 'system_file') return;
      const { parts, errors } = parseTemplate(value);
      const first = parts.find((p) => p.kind === 'expr') ?? errors[0];
      if (first) {
        const position = source.positionInValue(path, value, first.start, first.end, first.start);
        out.push(source.error(position, `$<< >> is not evaluated in ${label}; expressions work in ${FIELDS_WITH_EXPRESSIONS}`));
      }
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, [...path, i]));
    } else if (isRecord(value)) {
      for (const [key, item] of Object.entries(value)) walk(item, [...path, key]);
    }
  };
  walk(data, []);
  return out;
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
