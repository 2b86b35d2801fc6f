import { modelInfo, type Price } from './models.js';

/** Where Claude is reached (docs/providers.md): Anthropic's API, or a cloud that serves it. */
export const PROVIDERS = ['anthropic', 'bedrock', 'vertex', 'foundry'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export function isProviderName(name: string): name is ProviderName {
  return (PROVIDERS as readonly string[]).includes(name);
}

/** The name OpenTelemetry's GenAI conventions and the session give each provider. */
export const PROVIDER_TITLE: Record<ProviderName, string> = {
  anthropic: 'Anthropic',
  bedrock: 'Amazon Bedrock',
  vertex: 'Google Vertex AI',
  foundry: 'Microsoft Foundry',
};

const DATED = /^(.*)-(\d{8})$/;

/**
 * The id a provider knows a model by, from the name a workflow gives (docs/providers.md: models).
 * An id already in the cloud's form passes unchanged. Bedrock: `global.anthropic.NAME-v1:0` for a
 * dated name, `global.anthropic.NAME-v1` for another (the global cross-region inference profile,
 * which newer models need and which costs no more). Vertex: `NAME@DATE` for a dated name.
 * Anthropic and Foundry: the name itself.
 */
export function cloudModelId(provider: ProviderName, model: string): string {
  if (provider === 'bedrock') {
    if (cloudFormOf(model) === 'bedrock') return model;
    return `global.anthropic.${model}${DATED.test(model) ? '-v1:0' : '-v1'}`;
  }
  if (provider === 'vertex') {
    if (cloudFormOf(model) === 'vertex') return model;
    const dated = DATED.exec(model);
    return dated ? `${dated[1]}@${dated[2]}` : model;
  }
  return model;
}

/** The cloud whose own form a model name is in (a Bedrock id, profile or ARN; a Vertex id with `@`), if any. */
export function cloudFormOf(model: string): 'bedrock' | 'vertex' | undefined {
  if (model.startsWith('arn:') || /(^|\.)anthropic\./.test(model)) return 'bedrock';
  if (model.includes('@')) return 'vertex';
  return undefined;
}

/**
 * Bedrock and Vertex charge 10% more than the list price on a regional endpoint (one that keeps
 * the data in a region: a Bedrock in-region or geographic profile, a Vertex region other than
 * `global`) for Claude Sonnet 4.5 and the models after it; the global endpoint costs the same.
 */
export function regionalPremium(provider: ProviderName, model: string, vertexRegion: string | undefined): number {
  if (!modelInfo(model).regionalPremium) return 1;
  if (provider === 'bedrock') return cloudModelId('bedrock', model).startsWith('global.') ? 1 : 1.1;
  if (provider === 'vertex') return vertexRegion === undefined || vertexRegion === 'global' ? 1 : 1.1;
  return 1;
}

/** A price times `factor`, every rate of it. */
export function scaledPrice(price: Price, factor: number): Price {
  if (factor === 1) return price;
  const scale = (p: Omit<Price, 'long'>) => ({
    input: p.input * factor,
    output: p.output * factor,
    ...(p.cache_write !== undefined ? { cache_write: p.cache_write * factor } : {}),
    ...(p.cache_write_1h !== undefined ? { cache_write_1h: p.cache_write_1h * factor } : {}),
    ...(p.cache_read !== undefined ? { cache_read: p.cache_read * factor } : {}),
  });
  return { ...scale(price), ...(price.long ? { long: { over: price.long.over, ...scale(price.long) } } : {}) };
}
