import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAKE_AWS, FAKE_ENTRA_TOKEN, FAKE_FOUNDRY_KEY } from '../fake-anthropic/clouds.js';
import type { FakeAnthropic } from '../fake-anthropic/server.js';

/** A home with no cloud's files in it: no ~/.aws, no gcloud credentials, no Azure CLI profile. */
export function emptyHome(): string {
  return mkdtempSync(join(tmpdir(), 'conclave-home-'));
}

/**
 * The environment each cloud's tools leave in a CI job, pointed at the fake API: what
 * aws-actions/configure-aws-credentials, google-github-actions/auth (on a machine with a metadata
 * server) and a Foundry key give. Anthropic's key is blanked: the run must not need it.
 */
export function cloudEnv(server: FakeAnthropic, home = emptyHome()): NodeJS.ProcessEnv {
  const host = new URL(server.url).host;
  return {
    HOME: home,
    ANTHROPIC_API_KEY: '',
    // What a job with `permissions: id-token: write` has: the means to mint its OIDC token.
    ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'fake-request-token-for-conclave-0001',
    ACTIONS_ID_TOKEN_REQUEST_URL: 'http://127.0.0.1:9/token',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: FAKE_AWS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: FAKE_AWS.secretAccessKey,
    AWS_SESSION_TOKEN: FAKE_AWS.sessionToken,
    AWS_EC2_METADATA_DISABLED: 'true',
    ANTHROPIC_BEDROCK_BASE_URL: server.url,
    CLOUD_ML_REGION: 'us-east5',
    ANTHROPIC_VERTEX_PROJECT_ID: 'fake-project',
    ANTHROPIC_VERTEX_BASE_URL: `${server.url}/v1`,
    GCE_METADATA_HOST: host,
    GCE_METADATA_IP: host,
    ANTHROPIC_FOUNDRY_BASE_URL: `${server.url}/anthropic/`,
    ANTHROPIC_FOUNDRY_API_KEY: FAKE_FOUNDRY_KEY,
  };
}

/** A directory holding a fake `az` that prints an Entra token as `az account get-access-token` does. */
export function fakeAzureCli(): string {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-az-'));
  mkdirSync(dir, { recursive: true });
  const expires = Math.floor(Date.now() / 1000) + 3600;
  writeFileSync(
    join(dir, 'az'),
    `#!/bin/sh\ncase "$*" in *get-access-token*--scope\\ https://ai.azure.com/.default*) ;; *) echo "unexpected: $*" >&2; exit 2;; esac\n` +
      `printf '%s' '{"accessToken":"${FAKE_ENTRA_TOKEN}","expires_on":${expires},"tokenType":"Bearer"}'\n`,
  );
  chmodSync(join(dir, 'az'), 0o755);
  return dir;
}
