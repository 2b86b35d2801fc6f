import type { Diagnostic } from './diagnostic.js';
import type { Expr } from './expression.js';
import type { LocatedTemplate } from './located.js';
import type { WorkflowSource } from './source.js';
import type { WorkflowSpec } from './types.js';
import { isRecord, recordOf } from './value-checks.js';

/**
 * A setup step's output (a diff, the files under review: what is long) in the system prompt of
 * several agents, not in `context:`: each agent's system prompt begins with its own name, so no
 * two share a cached prefix and every call pays for the text in full. In `context:`, which every
 * agent's prompt begins with, the prompt cache serves it once written (docs/workflow.md: sharing
 * the prompt cache). A warning: the workflow runs as it is.
 */
export function sharedPromptWarnings(source: WorkflowSource, spec: WorkflowSpec, templates: ReadonlyMap<string, LocatedTemplate>): Diagnostic[] {
  const users = new Map<string, { who: string; count: number; path: (string | number)[] }[]>();
  for (const group of ['agents', 'templates'] as const) {
    for (const [name, agent] of Object.entries(recordOf(spec[group]))) {
      if (!isRecord(agent)) continue;
      const key = typeof agent.system === 'string' ? 'system' : typeof agent.system_file === 'string' ? 'system_file' : undefined;
      const template = key && templates.get(`${group}.${name}.${key}`);
      if (!template) continue;
      const forEach = agent.for_each;
      // A template is spawned, as many times as the run asks: many.
      const count = group === 'templates' ? 2 : Array.isArray(forEach) ? forEach.length : forEach !== undefined ? 2 : 1;
      const who = group === 'templates' ? `${name}-N` : Array.isArray(forEach) ? `${name} × ${forEach.length}` : forEach !== undefined ? `${name} × N` : name;
      for (const ref of new Set(template.parts.flatMap((p) => (p.kind === 'expr' ? setupRefs(p.expr) : []))))
        users.set(ref, [...(users.get(ref) ?? []), { who, count, path: [group, name, key] }]);
    }
  }
  const out: Diagnostic[] = [];
  for (const [ref, list] of users) {
    const total = list.reduce((sum, u) => sum + u.count, 0);
    if (total < 2) continue;
    out.push(
      source.warning(
        source.valuePosition(list[0]!.path),
        `$<< ${ref} >> is in the system prompt of ${list.map((u) => u.who).join(', ')}: each call pays for it in full, since no two agents' system ` +
          "prompts share a cached beginning; put it in context:, which every agent's prompt begins with, and the prompt cache serves it once written " +
          '(docs/workflow.md: sharing the prompt cache)',
      ),
    );
  }
  return out;
}

/** The setup outputs an expression reads, as `setup.ID`. */
function setupRefs(expr: Expr): string[] {
  switch (expr.kind) {
    case 'path':
      return expr.root === 'setup' && expr.keys.length > 0 ? [`setup.${String(expr.keys[0])}`] : [];
    case 'call':
      return expr.args.flatMap(setupRefs);
    case 'or':
      return [...setupRefs(expr.left), ...setupRefs(expr.right)];
    default:
      return [];
  }
}
