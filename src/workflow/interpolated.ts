import type { Diagnostic } from './diagnostic.js';
import { labelOf } from './schema-check.js';
import type { LocatedTemplate, LocatedText } from './located.js';
import { textInSource } from './located.js';
import { checkReferences, type Field } from './references.js';
import type { Path, WorkflowSource } from './source.js';
import { parseTemplate } from './template.js';
import type { WorkflowSpec } from './types.js';
import { isRecord, recordOf } from './value-checks.js';

const FIELDS_WITH_EXPRESSIONS = 'env, setup run, agent system and description, context, document text, kickoff and outputs';

/**
 * The loader's templates phase (docs/workflow.md: expressions): every text that is interpolated,
 * parsed, its references checked against what exists where it stands (inputs, setup steps before
 * it, agents, documents, `item` in a `for_each` agent's texts).
 */
export function collectTemplates(
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
export function strayExpressions(source: WorkflowSource, data: unknown, templates: Map<string, LocatedTemplate>): Diagnostic[] {
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
