import type { ProviderName } from './clouds.js';

/** The variables each cloud's credentials come in, as its tools and GitHub's auth actions leave them. */
const CLOUD_CREDENTIALS: Record<Exclude<ProviderName, 'anthropic'>, RegExp> = {
  bedrock: /^AWS_/i,
  vertex: /^(GOOGLE_APPLICATION_CREDENTIALS|GOOGLE_GHA_CREDS_PATH|CLOUDSDK_AUTH_.*|CLOUDSDK_.*CREDENTIAL.*|GCE_METADATA_.*)$/i,
  foundry: /^(AZURE_.*|ANTHROPIC_FOUNDRY_.*)$/i,
};

/** The job's OIDC identity (`permissions: id-token: write`), from which any cloud's credentials can be minted. */
const JOB_IDENTITY = /^ACTIONS_ID_TOKEN_REQUEST_/i;

/**
 * Whose credential the variable `name` is (docs/security.md: credentials): conclave's own
 * (`ANTHROPIC_*`), the job's identity, or that of a cloud among `providers`; nothing for another.
 * No tool ever gets one of them.
 */
export function credentialOf(name: string, providers: readonly ProviderName[]): ProviderName | 'identity' | undefined {
  if (/^ANTHROPIC_/i.test(name)) return 'anthropic';
  if (JOB_IDENTITY.test(name)) return 'identity';
  return providers.find((p): p is Exclude<ProviderName, 'anthropic'> => p !== 'anthropic' && CLOUD_CREDENTIALS[p].test(name));
}
