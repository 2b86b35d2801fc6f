import type { Diagnostic } from './diagnostic.js';
import type { WorkflowSource } from './source.js';
import { DEFAULT_MAX_DEPTH } from './limits.js';
import { isRecord, recordOf } from './value-checks.js';
import { didYouMean } from './suggest.js';
import type { WorkflowSpec } from './types.js';

/** An instance's name: `TEMPLATE-N`, N from 1 (docs/workflow.md: templates). */
export function instanceName(template: string, n: number): string {
  return `${template}-${n}`;
}

/**
 * Why a name a model chose for a spawned agent cannot be one, or undefined: the rules of a
 * declared agent's name, no agent's already (`taken`), and not of the shapes automatic names take
 * (`TEMPLATE-N`, `AGENT-fork-N`), which are kept for them.
 */
export function chosenNameProblem(
  name: string,
  taken: (name: string) => boolean,
  templates: readonly string[],
  people: readonly string[] = [],
): string | undefined {
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(name)) return 'it must be letters, digits, - and _ (at most 64), starting with a letter or digit';
  if (['all', 'system'].includes(name)) return `@${name} is kept by conclave`;
  const person = personNamed(name, people);
  if (person) return `${person} is a person who votes (people:): an agent may not take their name`;
  if (taken(name)) return 'an agent has that name already';
  const automatic = /^(.+)-[0-9]+$/.exec(name);
  if (automatic && (templates.includes(automatic[1]!) || /-fork$/.test(automatic[1]!)))
    return 'names of the form TEMPLATE-N and AGENT-fork-N are kept for the names conclave gives';
  return undefined;
}

/**
 * The person of `people` (the workflow's `people.voters`) whose login `name` is, case aside: an
 * agent so named would vote, and be shown, as that person (`@octocat: approve`) though no person
 * voted. A team (`@org/team`) is matched by its whole name only, which no agent name can spell.
 */
export function personNamed(name: string, people: readonly unknown[]): string | undefined {
  const login = name.replace(/^@/, '').toLowerCase();
  return people.find((p): p is string => typeof p === 'string' && p.replace(/^@/, '').toLowerCase() === login);
}

/** The templates and `for_each` agents of a file, whose instances the run makes. */
export function madeAtRun(spec: WorkflowSpec): string[] {
  const forEach = Object.entries(recordOf(spec.agents)).filter(([, a]) => isRecord(a) && a.for_each !== undefined);
  return [...Object.keys(recordOf(spec.templates)), ...forEach.map(([name]) => name)];
}

/**
 * What `spawns:` and `templates:` must hold: each spawns entry names a template; no declared
 * agent has a template's name or an instance's (`reviewer-2` would be two agents); a template no
 * agent can spawn is dead code.
 */
export function spawnProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const out: Diagnostic[] = [];
  const templates = Object.keys(recordOf(spec.templates));
  const spawned = new Set<string>();
  for (const section of ['agents', 'templates'] as const) {
    for (const [name, agent] of Object.entries(recordOf(spec[section]))) {
      if (!isRecord(agent) || !Array.isArray(agent.spawns)) continue;
      agent.spawns.forEach((entry, i) => {
        if (typeof entry !== 'string') return;
        spawned.add(entry);
        if (templates.includes(entry)) return;
        const known = templates.length ? `; the templates are ${templates.join(', ')}` : '; declare it under templates:';
        out.push(
          source.error(
            source.valuePosition([section, name, 'spawns', i]),
            `${section}.${name}.spawns[${i}] names "${entry}", which is not a template${didYouMean(entry, templates)}${known}`,
          ),
        );
      });
    }
  }
  const agents = Object.entries(recordOf(spec.agents));
  const forEach = agents.filter(([, a]) => isRecord(a) && a.for_each !== undefined).map(([name]) => name);
  const forks = [...agents, ...Object.entries(recordOf(spec.templates))].filter(([, a]) => isRecord(a) && a.fork === true).map(([name]) => `${name}-fork`);
  const people = isRecord(spec.people) && Array.isArray(spec.people.voters) ? spec.people.voters : [];
  for (const section of ['agents', 'templates'] as const)
    for (const name of Object.keys(recordOf(spec[section]))) {
      const person = personNamed(name, people);
      if (person)
        out.push(
          source.error(source.keyPosition([section, name]), `${section}.${name} has the name of ${person}, a person who votes (people:): rename the agent`),
        );
    }
  for (const [agent] of agents) {
    const instanceOf = (source: string) => agent.startsWith(`${source}-`) && /^[0-9]+$/.test(agent.slice(source.length + 1));
    const clash = templates.find((t) => agent === t || instanceOf(t)) ?? forEach.find(instanceOf) ?? forks.find(instanceOf);
    if (clash)
      out.push(
        source.error(
          source.keyPosition(['agents', agent]),
          `agent "${agent}" has the name of ${agent === clash ? 'a template' : `an instance of "${clash}"`}; rename one of them`,
        ),
      );
  }
  const declared = Object.keys(recordOf(spec.agents)).length;
  if (typeof spec.limits?.max_agents === 'number' && spec.limits.max_agents < declared) {
    out.push(
      source.error(
        source.valuePosition(['limits', 'max_agents']),
        `limits.max_agents is ${spec.limits.max_agents}, fewer than the ${declared} agents the file declares`,
      ),
    );
  }
  const maxDepth = spec.limits?.max_depth ?? DEFAULT_MAX_DEPTH;
  for (const [template, t] of Object.entries(recordOf(spec.templates))) {
    if (!spawned.has(template))
      out.push(source.warning(source.keyPosition(['templates', template]), `template "${template}" is spawned by no agent; add it to an agent's spawns:`));
    if (isRecord(t) && Array.isArray(t.spawns) && t.spawns.includes(template)) {
      out.push(
        source.warning(
          source.keyPosition(['templates', template, 'spawns']),
          `template "${template}" spawns itself: its instances nest until limits.max_depth (${maxDepth}) refuses the next spawn`,
        ),
      );
    }
  }
  return out;
}

/**
 * `for_each:` is on a worker (its instances answer to its manager), and a string is one
 * expression whose value is the list: `$<< lines(setup.files) >>`.
 */
export function forEachProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const [name, agent] of Object.entries(recordOf(spec.agents))) {
    if (!isRecord(agent) || agent.for_each === undefined) continue;
    if (agent.role !== 'worker')
      out.push(
        source.error(
          source.keyPosition(['agents', name, 'for_each']),
          `agents.${name}.for_each: only a worker can have instances per item (a manager leads one team)`,
        ),
      );
    if (typeof agent.for_each === 'string' && !/^\s*\$<<[\s\S]*>>\s*$/.test(agent.for_each)) {
      out.push(
        source.error(
          source.valuePosition(['agents', name, 'for_each']),
          `agents.${name}.for_each must be a list, or one expression giving a list, such as "$<< lines(setup.files) >>"`,
        ),
      );
    }
  }
  return out;
}
