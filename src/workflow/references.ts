import { pathsOf, type Expr, type PathExpr } from './expression.js';
import { didYouMean } from './suggest.js';

/** Where an expression stands decides what it may read. */
export type Field = 'env' | 'setup' | 'prompt' | 'outputs';

export interface ReferenceScope {
  field: Field;
  inputs: readonly string[];
  /** Every setup id, in order. */
  setupIds: readonly string[];
  /** In a setup step: its index; it may read only the steps before it. */
  setupIndex?: number;
  agents: readonly string[];
  /** The names of the workflow's documents. */
  documents?: readonly string[];
  /** In the system or description of an agent with `for_each`: `item` and `item_index` are its instance's. */
  item?: boolean;
}

export interface ReferenceError {
  offset: number;
  message: string;
}

const ROOTS = ['inputs', 'env', 'setup', 'workflow', 'run', 'github', 'result', 'agents', 'proposals', 'documents', 'usage', 'item', 'item_index'];
const ITEM_ROOTS = ['item', 'item_index'];
const RUN_END_ROOTS = new Set(['result', 'agents', 'proposals', 'documents', 'usage']);
const ALLOWED: Record<Field, readonly string[]> = {
  env: ['inputs', 'workflow'],
  setup: ['inputs', 'env', 'setup', 'workflow', 'run'],
  prompt: ['inputs', 'env', 'setup', 'workflow', 'run', 'github'],
  outputs: ROOTS,
};
const FIELD_WORDS: Record<Field, string> = {
  env: 'env values',
  setup: 'setup steps',
  prompt: 'prompts',
  outputs: 'outputs',
};
/** The fields of the roots whose shape is fixed. */
const FIELDS: Record<string, readonly string[]> = {
  workflow: ['name', 'file'],
  run: ['id', 'session'],
  result: ['status', 'summary'],
  usage: ['input_tokens', 'output_tokens', 'cost_usd'],
  // The event that started the job, as it was then (docs/workflow.md: expressions); text from it is untrusted unless its author may write.
  github: ['event_name', 'title', 'body', 'comment', 'author'],
};
/** GitHub Actions' own contexts, which people reach for out of habit. */
const GITHUB_CONTEXTS: Record<string, string> = {
  secrets: '; declare an input with secret: true and read inputs.NAME',
  vars: "; GitHub's contexts are not available here: pass the value as an input",
  matrix: "; GitHub's contexts are not available here: pass the value as an input",
  steps: "; GitHub's contexts are not available here: pass the value as an input, or use setup.ID for a setup step's output",
};
const AGENT_FIELDS = ['last_message', 'turns'];
const PROPOSAL_FIELDS = ['question', 'status', 'winner', 'tally', 'decided_by'];

/** Checks every path in `expr` against what the workflow declares and where the expression stands. */
export function checkReferences(expr: Expr, scope: ReferenceScope): ReferenceError[] {
  const errors: ReferenceError[] = [];
  for (const path of pathsOf(expr)) {
    const message = checkPath(path, scope);
    if (message) errors.push({ offset: path.offset, message });
  }
  return errors;
}

function checkPath(path: PathExpr, scope: ReferenceScope): string | undefined {
  const { root, keys } = path;
  if (!ROOTS.includes(root)) {
    const hint = GITHUB_CONTEXTS[root] ?? (didYouMean(root, ROOTS) || `; here an expression can read ${ALLOWED[scope.field].join(', ')}`);
    return `unknown name "${root}"${hint}`;
  }
  if (ITEM_ROOTS.includes(root)) {
    if (!scope.item) return `${root} is only known in the system and description of an agent with for_each`;
    return root === 'item_index' ? tooDeepOf(path, 0) : undefined;
  }
  if (!ALLOWED[scope.field].includes(root)) {
    if (RUN_END_ROOTS.has(root)) return `${root} is only known when the run ends: use it in outputs`;
    return `${root} cannot be used in ${FIELD_WORDS[scope.field]}; they can read ${ALLOWED[scope.field].join(' and ')}`;
  }
  const [first, second, third] = keys;
  const tooDeep = (depth: number) =>
    keys.length > depth ? `${[root, ...keys.slice(0, depth)].join('.')} is a single value; it has no field ${JSON.stringify(keys[depth])}` : undefined;
  switch (root) {
    case 'inputs':
      if (first === undefined) return undefined;
      if (!scope.inputs.includes(String(first))) {
        return `input "${first}" is not declared${didYouMean(String(first), scope.inputs)}`;
      }
      return tooDeep(1);
    case 'env':
      return first === undefined ? undefined : tooDeep(1);
    case 'setup':
      return first === undefined ? undefined : (checkSetup(String(first), scope) ?? tooDeep(1));
    case 'agents':
      if (first === undefined) return undefined;
      if (!scope.agents.includes(String(first))) {
        return `no agent is named "${first}"${didYouMean(String(first), scope.agents)}`;
      }
      if (second !== undefined && !AGENT_FIELDS.includes(String(second))) {
        return unknownField(`agents.${first}`, String(second), AGENT_FIELDS);
      }
      return tooDeep(2);
    case 'documents': {
      if (first === undefined) return undefined;
      const documents = scope.documents ?? [];
      if (!documents.includes(String(first)))
        return `no document is named "${first}"${didYouMean(String(first), documents) || (documents.length ? '' : '; declare it under documents:')}`;
      return tooDeep(1);
    }
    case 'proposals':
      if (second !== undefined && !PROPOSAL_FIELDS.includes(String(second))) {
        return unknownField(`proposals.${first}`, String(second), PROPOSAL_FIELDS);
      }
      return second === 'tally' ? (third === undefined ? undefined : tooDeep(3)) : tooDeep(2);
    default: {
      const fields = FIELDS[root]!;
      if (first !== undefined && !fields.includes(String(first))) return unknownField(root, String(first), fields);
      return tooDeep(1);
    }
  }
}

function tooDeepOf({ root, keys }: PathExpr, depth: number): string | undefined {
  return keys.length > depth ? `${[root, ...keys.slice(0, depth)].join('.')} is a single value; it has no field ${JSON.stringify(keys[depth])}` : undefined;
}

function checkSetup(id: string, scope: ReferenceScope): string | undefined {
  const index = scope.setupIds.indexOf(id);
  if (index === -1) return `no setup step has the id "${id}"${didYouMean(id, scope.setupIds)}`;
  if (scope.setupIndex === undefined) return undefined;
  if (index === scope.setupIndex) return `setup step "${id}" cannot read its own output`;
  if (index > scope.setupIndex) return `setup step "${id}" runs after this one, so its output is not known yet`;
  return undefined;
}

function unknownField(owner: string, field: string, fields: readonly string[]): string {
  const hint = didYouMean(field, fields);
  return `${owner} has no field "${field}"${hint || `; its fields are ${fields.join(', ')}`}`;
}
