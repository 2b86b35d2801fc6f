import { defaultMaxTokens, modelInfo } from '../provider/models.js';
import type { Diagnostic } from './diagnostic.js';
import { DEFAULT_MODEL, durationMs, durationProblem } from './limits.js';
import type { WorkflowSource } from './source.js';
import { describeValue, quote } from './suggest.js';
import type { InputSpec, WorkflowSpec } from './types.js';
import { credentialOf } from '../provider/credential-names.js';
import { cloudFormOf } from '../provider/clouds.js';
import { providersOf } from './providers-used.js';

// Checks of values the schema lets through: inputs' defaults and enums, timers, setup ids.

/** Durations the schema lets through that no timer can hold: `0ms`, `600h`. */
export function durationProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const places: { path: (string | number)[]; value: unknown }[] = [
    { path: ['limits', 'timeout'], value: isRecord(spec.limits) ? spec.limits.timeout : undefined },
    { path: ['limits', 'wait_timeout'], value: isRecord(spec.limits) ? spec.limits.wait_timeout : undefined },
    { path: ['people', 'deadline'], value: isRecord(spec.people) ? spec.people.deadline : undefined },
  ];
  (Array.isArray(spec.setup) ? spec.setup : []).forEach((step, i) =>
    places.push({ path: ['setup', i, 'timeout'], value: isRecord(step) ? step.timeout : undefined }),
  );
  return places.flatMap(({ path, value }) => {
    if (typeof value !== 'string' && typeof value !== 'number') return [];
    let ms: number;
    try {
      ms = durationMs(value);
    } catch {
      return []; // the schema reports it
    }
    const problem = durationProblem(ms);
    const name = path
      .map((p) => (typeof p === 'number' ? `[${p}]` : p))
      .join('.')
      .replace(/\.\[/g, '[');
    return problem ? [source.error(source.valuePosition(path), `${name} ${problem}; found ${JSON.stringify(value)}`)] : [];
  });
}

export function inputProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const [name, input] of Object.entries(recordOf<InputSpec>(spec.inputs))) {
    if (!isRecord(input) || !['string', 'number', 'integer', 'boolean'].includes(input.type)) continue;
    const values = Array.isArray(input.enum) ? input.enum : [];
    values.forEach((value, i) => {
      if (!hasInputType(input, value)) {
        out.push(
          source.error(
            source.valuePosition(['inputs', name, 'enum', i]),
            `inputs.${name}.enum[${i}] must be ${TYPE_WORDS[input.type]}, the input's type; found ${describeValue(value)}`,
          ),
        );
      }
    });
    if (input.default !== undefined) {
      const at = source.valuePosition(['inputs', name, 'default']);
      if (!hasInputType(input, input.default)) {
        out.push(source.error(at, `inputs.${name}.default must be ${TYPE_WORDS[input.type]}, the input's type; found ${describeValue(input.default)}`));
      } else if (values.length > 0 && !values.includes(input.default)) {
        out.push(source.error(at, `inputs.${name}.default ${quote(input.default)} is not one of the input's enum values`));
      }
      if (input.required === true) {
        out.push(source.warning(at, `input "${name}" is required, so its default is never used`));
      }
      if (input.secret === true) {
        out.push(source.warning(at, `secret input "${name}" has its default written in the workflow file; pass the value at run time instead`));
      }
    }
  }
  return out;
}

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
};

export function hasInputType(input: InputSpec, value: unknown): boolean {
  switch (input.type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
  }
}

export function setupIdProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const out: Diagnostic[] = [];
  const seen = new Map<string, number>();
  (Array.isArray(spec.setup) ? spec.setup : []).forEach((step, i) => {
    if (!isRecord(step) || typeof step.id !== 'string') return;
    const first = seen.get(step.id);
    if (first === undefined) seen.set(step.id, i);
    else out.push(source.error(source.valuePosition(['setup', i, 'id']), `setup id "${step.id}" is already used by setup[${first}]`));
  });
  return out;
}

/** Each agent's instructions: the `system` text, or the contents of `system_file`. */

// biome-ignore lint/suspicious/noExplicitAny: a checked map whose values its callers read as they check them
export function isRecord(value: unknown): value is Record<string, any> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function recordOf<T = unknown>(value: unknown): Record<string, T> {
  return isRecord(value) ? (value as Record<string, T>) : {};
}

/** A thinking budget must leave room for the reply: below max_tokens (the agent's own, or the defaults'). */
export function thinkingProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const defaults: Record<string, unknown> = isRecord(spec.defaults) ? { ...spec.defaults } : {};
  const out: Diagnostic[] = [];
  const places: [(string | number)[], Record<string, unknown>][] = [[['defaults'], defaults]];
  for (const [name, agent] of Object.entries(recordOf(spec.agents))) if (isRecord(agent)) places.push([['agents', name], agent]);
  for (const [path, settings] of places) {
    if (typeof settings.thinking !== 'number') continue;
    const maxTokens = settings.max_tokens ?? defaults.max_tokens;
    if (typeof maxTokens === 'number' && settings.thinking >= maxTokens) {
      out.push(
        source.error(
          source.valuePosition([...path, 'thinking']),
          `${path.join('.')}.thinking (${settings.thinking} tokens) must be below max_tokens (${maxTokens}), to leave room for the reply`,
        ),
      );
    }
  }
  return out;
}

/** compact_at must leave room in the model's window for the answer (max_tokens). */
export function compactAtProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const defaults: Record<string, unknown> = isRecord(spec.defaults) ? { ...spec.defaults } : {};
  // Each place that sets compact_at, with the settings that apply there (an agent's over the defaults).
  const places: [(string | number)[], unknown, Record<string, unknown>][] = [[['defaults'], defaults.compact_at, defaults]];
  for (const [name, agent] of Object.entries(recordOf(spec.agents)))
    if (isRecord(agent)) places.push([['agents', name], agent.compact_at, { ...defaults, ...agent }]);
  return places.flatMap(([path, at, settings]) => {
    if (typeof at !== 'number') return [];
    const model = typeof settings.model === 'string' ? settings.model : DEFAULT_MODEL;
    const { window } = modelInfo(model);
    const room = window - (typeof settings.max_tokens === 'number' ? settings.max_tokens : defaultMaxTokens(model));
    if (at <= room) return [];
    return [
      source.error(
        source.valuePosition([...path, 'compact_at']),
        `${path.join('.')}.compact_at (${at} tokens) leaves no room for an answer in ${model}'s context window of ${window} tokens: keep it at most ${room}`,
      ),
    ];
  });
}

/**
 * A model named in a cloud's own form (a Bedrock id, a Vertex id) for an agent whose provider is
 * another: a warning, since `--provider` may send it to that cloud after all (docs/providers.md).
 */
export function modelFormWarnings(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const top = spec.defaults?.provider ?? spec.provider ?? 'anthropic';
  const places: { path: string[]; model: unknown; provider: unknown }[] = [{ path: ['defaults', 'model'], model: spec.defaults?.model, provider: top }];
  for (const group of ['agents', 'templates'] as const) {
    for (const [name, entry] of Object.entries(isRecord(spec[group]) ? spec[group] : {})) {
      if (isRecord(entry)) places.push({ path: [group, name, 'model'], model: entry.model, provider: entry.provider ?? top });
    }
  }
  return places.flatMap(({ path, model, provider }) => {
    const form = typeof model === 'string' ? cloudFormOf(model) : undefined;
    if (!form || form === provider) return [];
    const title = form === 'bedrock' ? 'an Amazon Bedrock id' : 'a Google Vertex AI id';
    return [
      source.warning(
        source.valuePosition(path),
        `${path.join('.')} "${String(model)}" is ${title}, but the provider there is ${String(provider)}: name the model as Anthropic does, or set provider: ` +
          `${form}`,
      ),
    ];
  });
}

/** conclave's own credentials never reach a tool: tools_env may not name them. */
export function toolsEnvProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const names = Array.isArray(spec.tools_env) ? spec.tools_env : [];
  const providers = providersOf(spec);
  return names.flatMap((name, i) => {
    const owner = typeof name === 'string' ? credentialOf(name, providers) : undefined;
    if (!owner) return [];
    const whose =
      owner === 'anthropic'
        ? ''
        : owner === 'identity'
          ? ", the job's OIDC identity, from which cloud credentials are minted"
          : `, a credential of provider ${owner}, which this workflow uses`;
    return [source.error(source.valuePosition(['tools_env', i]), `tools_env may not name ${name}${whose}: conclave's own credentials never reach a tool`)];
  });
}

/**
 * `people.voters`: each person or team once (GitHub's names ignore case). A warning when nothing
 * makes a proposal reach them: no `people.decide`, and no prompt names one of them, so agents
 * decide everything among themselves unless a model happens to ask.
 */
export function peopleProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const voters = isRecord(spec.people) && Array.isArray(spec.people.voters) ? spec.people.voters : [];
  const seen = new Set<string>();
  const twice = voters.flatMap((voter, i) => {
    if (typeof voter !== 'string') return [];
    const key = voter.toLowerCase();
    if (!seen.has(key)) return (seen.add(key), []);
    return [source.error(source.valuePosition(['people', 'voters', i]), `people.voters[${i}] names ${voter} a second time: name each person or team once`)];
  });
  const decide = isRecord(spec.people) ? spec.people.decide : undefined;
  if (voters.length === 0 || (Array.isArray(decide) && decide.length > 0)) return twice;
  const prompts = JSON.stringify([spec.kickoff, spec.context, spec.agents, spec.templates]).toLowerCase();
  if (voters.some((v) => typeof v === 'string' && prompts.includes(v.toLowerCase()))) return twice;
  return [
    ...twice,
    source.warning(
      source.keyPosition(['people']),
      `people names ${voters.join(', ')}, but no proposal has to reach them: no people.decide, and no prompt names them. Add people.decide: [ID] for ` +
        'the decisions that are theirs (a verdict, a merge), or name them in a prompt',
    ),
  ];
}
