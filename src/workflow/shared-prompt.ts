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

/**
 * With `context:`, the team's prompts share their beginning only where they give the model the
 * same tools (tools come first in a prompt) and go to the same model. Every agent is sent the
 * team's coordination tools (engine/teams/team-tools.ts), so what differs is an agent's own workspace
 * and MCP tools, and its model: an agent that differs from most of the team writes the whole
 * context to the cache again instead of reading what the others wrote. Said of each agent (or
 * template) that differs from most of them.
 */
export function contextSharingWarnings(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  if (typeof spec.context !== 'string' || spec.context.trim() === '') return [];
  const defaultModel = typeof spec.defaults?.model === 'string' ? spec.defaults.model : undefined;
  const groups = new Map<string, { who: string[]; count: number; path: (string | number)[]; tools: string[]; model?: string }>();
  for (const group of ['agents', 'templates'] as const) {
    for (const [name, agent] of Object.entries(recordOf(spec[group]))) {
      if (!isRecord(agent)) continue;
      const tools = Array.isArray(agent.tools) ? [...new Set(agent.tools.map(String))].sort() : [];
      const model = typeof agent.model === 'string' ? agent.model : defaultModel;
      const key = JSON.stringify([tools, model ?? '']);
      const forEach = agent.for_each;
      const count = group === 'templates' ? 2 : Array.isArray(forEach) ? forEach.length : forEach !== undefined ? 2 : 1;
      const who = group === 'templates' ? `${name}-N` : Array.isArray(forEach) ? `${name} × ${forEach.length}` : forEach !== undefined ? `${name} × N` : name;
      const found = groups.get(key) ?? groups.set(key, { who: [], count: 0, path: [group, name], tools, ...(model ? { model } : {}) }).get(key)!;
      found.who.push(who);
      found.count += count;
    }
  }
  if (groups.size < 2) return [];
  const [most, ...others] = [...groups.values()].sort((a, b) => b.count - a.count);
  const list = (who: string[]) => who.map((w) => `@${w}`).join(', ');
  return others.map((g) => {
    const differs = [
      g.tools.join() !== most!.tools.join() && `other tools (${g.tools.join(', ') || 'none'}) than ${list(most!.who)} (${most!.tools.join(', ') || 'none'})`,
      g.model !== most!.model && `another model (${g.model ?? 'the default'})`,
    ].filter(Boolean);
    return source.warning(
      source.keyPosition(g.path),
      `with context:, ${list(g.who)} give${g.count === 1 ? 's' : ''} the model ${differs.join(', and ')}: tools come first in a prompt, so ` +
        `${list(g.who)} write${g.count === 1 ? 's' : ''} the whole context to the prompt cache again instead of reading what the others wrote; ` +
        'give it the same tools and model as the others where it can do without, or accept one more write (docs/workflow.md: sharing the prompt cache)',
    );
  });
}
