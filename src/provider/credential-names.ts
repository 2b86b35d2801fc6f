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
 * (`ANTHROPIC_*`, the workers' secret), the job's identity, or that of a cloud among `providers`; nothing for another.
 * No tool ever gets one of them.
 */
export function credentialOf(name: string, providers: readonly ProviderName[]): ProviderName | 'identity' | undefined {
  if (/^(ANTHROPIC_|CONCLAVE_WORKERS_SECRET$)/i.test(name)) return 'anthropic';
  if (JOB_IDENTITY.test(name)) return 'identity';
  return providers.find((p): p is Exclude<ProviderName, 'anthropic'> => p !== 'anthropic' && CLOUD_CREDENTIALS[p].test(name));
}

/** Variables that name a file holding a credential, by whose credential it is. */
const CREDENTIAL_FILES: Record<ProviderName, string[]> = {
  anthropic: ['ANTHROPIC_IDENTITY_TOKEN_FILE'],
  bedrock: ['AWS_WEB_IDENTITY_TOKEN_FILE', 'AWS_SHARED_CREDENTIALS_FILE', 'AWS_CONFIG_FILE'],
  // google-github-actions/auth writes its file into the workspace (gha-creds-*.json): with
  // workload identity federation it holds the request token of the job's OIDC identity.
  vertex: ['GOOGLE_APPLICATION_CREDENTIALS', 'GOOGLE_GHA_CREDS_PATH', 'CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE'],
  foundry: ['AZURE_FEDERATED_TOKEN_FILE', 'AZURE_CLIENT_CERTIFICATE_PATH'],
};

/** Where each cloud's own tools keep their credentials, under the home directory. */
const CREDENTIAL_DIRS: Partial<Record<ProviderName, string[]>> = {
  bedrock: ['.aws'],
  vertex: ['.config/gcloud'],
  foundry: ['.azure'],
};

/**
 * The files and directories that hold credentials of the run's providers (docs/security.md):
 * the workspace tools do not read them, and run_command's sandbox hides them.
 */
export function credentialPaths(env: NodeJS.ProcessEnv, providers: readonly ProviderName[]): { files: string[]; dirs: string[] } {
  const used: ProviderName[] = ['anthropic', ...providers.filter((p) => p !== 'anthropic')];
  const files = used.flatMap((p) => CREDENTIAL_FILES[p].map((name) => env[name]).filter((v): v is string => typeof v === 'string' && v.trim() !== ''));
  const home = env.HOME;
  const dirs = home ? used.flatMap((p) => (CREDENTIAL_DIRS[p] ?? []).map((d) => `${home}/${d}`)) : [];
  return { files: [...new Set(files)], dirs };
}
