import { isProviderName, type ProviderName } from '../provider/clouds.js';
import type { WorkflowSpec } from './types.js';

/**
 * Every provider the run's agents and templates may call (docs/providers.md): `--provider` alone
 * when it is given. Read from a spec the schema may not have passed yet: what is not a provider
 * name counts as none.
 */
export function providersOf(spec: WorkflowSpec, override?: ProviderName): ProviderName[] {
  if (override) return [override];
  const named = (value: unknown): ProviderName | undefined => (typeof value === 'string' && isProviderName(value) ? value : undefined);
  const entries = (group: unknown): unknown[] => (typeof group === 'object' && group !== null ? Object.values(group) : []);
  const top = named(spec.defaults?.provider) ?? named(spec.provider) ?? 'anthropic';
  const agents = [...entries(spec.agents), ...entries(spec.templates)];
  if (agents.length === 0) return [top];
  return [...new Set(agents.map((a) => named(typeof a === 'object' && a !== null ? (a as { provider?: unknown }).provider : undefined) ?? top))];
}
