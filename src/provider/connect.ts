import type Anthropic from '@anthropic-ai/sdk';
import { UsageError } from '../conclave-error.js';
import type { ProviderName } from './clouds.js';
import { azureCliToken } from './azure-cli-token.js';
import { keptUntilExpiry } from './kept-until-expiry.js';
import { withinTime } from './time-limit.js';
import type { Fetch } from './http-fetch.js';

/** What every provider's SDK client is made with. */
export interface ClientOptions {
  maxRetries: number;
  timeout: number;
  openTelemetry: false;
  fetch: Fetch;
}

/** What conclave needs of an SDK client, Anthropic's or a cloud's. */
export interface MessagesClient {
  messages: Pick<Anthropic['messages'], 'stream'> & Partial<Pick<Anthropic['messages'], 'batches' | 'countTokens'>>;
}

/** A provider whose credentials were found, and how to make its client. */
export interface Connection {
  provider: ProviderName;
  /** Each call's client: one per provider, made once. */
  client(options: ClientOptions): MessagesClient;
  /** Vertex's region (`CLOUD_ML_REGION`), which sets its price. */
  region?: string;
}

/** Credentials a provider needs are not there: exit 2, before anything runs, saying what to set. */
export class MissingCredentials extends UsageError {}

const CHECK_TIMEOUT_MS = 20_000;

export const NO_API_KEY =
  'ANTHROPIC_API_KEY is not set, so no model can be called. Create a key at https://console.anthropic.com/settings/keys and run:\n' +
  '  export ANTHROPIC_API_KEY=sk-ant-...\n' +
  "In GitHub Actions, pass ${{ secrets.ANTHROPIC_API_KEY }} to the action's anthropic-api-key input, or use workload identity federation " +
  '(ANTHROPIC_FEDERATION_RULE_ID, ANTHROPIC_ORGANIZATION_ID and ANTHROPIC_IDENTITY_TOKEN_FILE), or another provider (docs/providers.md).';

/**
 * Checks that `provider`'s credentials can be had, the way its cloud's own tools leave them, and
 * makes its client (docs/providers.md). The clouds' SDKs load only here, for a provider in use.
 */
export async function connect(provider: ProviderName, env: NodeJS.ProcessEnv): Promise<Connection> {
  switch (provider) {
    case 'anthropic':
      return connectAnthropic(env);
    case 'bedrock':
      return connectBedrock(env);
    case 'vertex':
      return connectVertex(env);
    case 'foundry':
      return connectFoundry(env);
  }
}

async function connectAnthropic(env: NodeJS.ProcessEnv): Promise<Connection> {
  const apiKey = env.ANTHROPIC_API_KEY?.trim();
  // Workload identity federation: the SDK exchanges the identity token for an access token itself.
  const federated = Boolean(
    env.ANTHROPIC_FEDERATION_RULE_ID && env.ANTHROPIC_ORGANIZATION_ID && (env.ANTHROPIC_IDENTITY_TOKEN_FILE || env.ANTHROPIC_IDENTITY_TOKEN),
  );
  if (!apiKey && !federated && !env.ANTHROPIC_AUTH_TOKEN && !env.ANTHROPIC_PROFILE) throw new MissingCredentials(NO_API_KEY);
  const { default: Anthropic } = await import('@anthropic-ai/sdk');
  return { provider: 'anthropic', client: (options) => new Anthropic({ ...(apiKey ? { apiKey } : {}), ...options }) };
}

async function connectBedrock(env: NodeJS.ProcessEnv): Promise<Connection> {
  const awsRegion = env.AWS_REGION || env.AWS_DEFAULT_REGION;
  if (!awsRegion)
    throw new MissingCredentials(
      'provider bedrock needs AWS_REGION (the region of your Bedrock models, such as us-east-1); aws-actions/configure-aws-credentials sets it from its ' +
        'aws-region input',
    );
  const { AnthropicBedrock } = await import('@anthropic-ai/bedrock-sdk');
  if (env.AWS_BEARER_TOKEN_BEDROCK)
    return { provider: 'bedrock', client: (options) => new AnthropicBedrock({ awsRegion, apiKey: env.AWS_BEARER_TOKEN_BEDROCK!, ...options }) };
  const { createCredentialChain, fromEnv, fromNodeProviderChain } = await import('@aws-sdk/credential-providers');
  const chain = keptUntilExpiry(createCredentialChain(fromEnv(), fromNodeProviderChain()));
  await bounded(chain(), 'AWS credentials').catch((e: unknown) => {
    throw new MissingCredentials(
      `provider bedrock found no AWS credentials (${reason(e)}). In GitHub Actions, run aws-actions/configure-aws-credentials with role-to-assume (OIDC) ` +
        `before conclave; ` +
        'elsewhere, set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK',
      { cause: e },
    );
  });
  return { provider: 'bedrock', client: (options) => new AnthropicBedrock({ awsRegion, providerChainResolver: () => Promise.resolve(chain), ...options }) };
}

async function connectVertex(env: NodeJS.ProcessEnv): Promise<Connection> {
  const region = env.CLOUD_ML_REGION;
  if (!region)
    throw new MissingCredentials(
      'provider vertex needs CLOUD_ML_REGION (global, or a region such as us-east5) and ANTHROPIC_VERTEX_PROJECT_ID (your Google Cloud project)',
    );
  const [{ AnthropicVertex }, { GoogleAuth }] = await Promise.all([import('@anthropic-ai/vertex-sdk'), import('google-auth-library')]);
  const googleAuth = new GoogleAuth({ scopes: 'https://www.googleapis.com/auth/cloud-platform' });
  await bounded(googleAuth.getAccessToken(), 'Google credentials').catch((e: unknown) => {
    throw new MissingCredentials(
      `provider vertex found no Google application default credentials (${reason(e)}). In GitHub Actions, run google-github-actions/auth (workload identity ` +
        `federation) before conclave; ` +
        'elsewhere, gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS',
      { cause: e },
    );
  });
  const projectId = env.ANTHROPIC_VERTEX_PROJECT_ID || (await bounded(googleAuth.getProjectId(), 'the Google project').catch(() => undefined));
  if (!projectId) throw new MissingCredentials('provider vertex needs ANTHROPIC_VERTEX_PROJECT_ID: the credentials name no Google Cloud project');
  return { provider: 'vertex', region, client: (options) => new AnthropicVertex({ region, projectId, googleAuth, ...options }) };
}

async function connectFoundry(env: NodeJS.ProcessEnv): Promise<Connection> {
  const place = env.ANTHROPIC_FOUNDRY_BASE_URL
    ? { baseURL: env.ANTHROPIC_FOUNDRY_BASE_URL }
    : env.ANTHROPIC_FOUNDRY_RESOURCE
      ? { resource: env.ANTHROPIC_FOUNDRY_RESOURCE }
      : undefined;
  if (!place) throw new MissingCredentials('provider foundry needs ANTHROPIC_FOUNDRY_RESOURCE (your Foundry resource name) or ANTHROPIC_FOUNDRY_BASE_URL');
  const { AnthropicFoundry } = await import('@anthropic-ai/foundry-sdk');
  const apiKey = env.ANTHROPIC_FOUNDRY_API_KEY;
  if (apiKey) return { provider: 'foundry', client: (options) => new AnthropicFoundry({ ...place, apiKey, ...options }) };
  // An Entra ID token, from the Azure CLI that azure/login signs in (with OIDC in GitHub Actions).
  const token = azureCliToken(env);
  await bounded(token(), 'an Entra ID token').catch((e: unknown) => {
    throw new MissingCredentials(
      `provider foundry found no credentials (${reason(e)}): set ANTHROPIC_FOUNDRY_API_KEY, or sign in to Azure first (azure/login in GitHub Actions, az ` +
        `login elsewhere)`,
      { cause: e },
    );
  });
  return { provider: 'foundry', client: (options) => new AnthropicFoundry({ ...place, azureADTokenProvider: token, ...options }) };
}

function bounded<T>(work: Promise<T>, what: string): Promise<T> {
  return withinTime(work, CHECK_TIMEOUT_MS, `no answer within ${CHECK_TIMEOUT_MS / 1000} s while getting ${what}`);
}

function reason(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  return message.split('\n')[0]!.trim();
}
