import { execFile } from 'node:child_process';
import { keptUntilExpiry } from './kept-until-expiry.js';

/** The scope of Foundry's Claude endpoints in Entra ID. */
const FOUNDRY_SCOPE = 'https://ai.azure.com/.default';

/**
 * Entra ID access tokens for Foundry from the Azure CLI, which azure/login signs in (with OIDC in
 * GitHub Actions) and `az login` elsewhere: each is kept until five minutes before it expires.
 */
export function azureCliToken(env: NodeJS.ProcessEnv): () => Promise<string> {
  const token = keptUntilExpiry(
    () =>
      new Promise<{ token: string; expiration?: Date }>((resolve, reject) => {
        execFile(
          'az',
          ['account', 'get-access-token', '--scope', FOUNDRY_SCOPE, '--output', 'json'],
          { env, timeout: 30_000, maxBuffer: 1 << 20 },
          (error, stdout, stderr) => {
            if (error) {
              const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
              return reject(
                new Error(
                  missing
                    ? 'the Azure CLI (az) is not installed'
                    : `az account get-access-token failed: ${String(stderr).trim().split('\n')[0] || error.message}`,
                ),
              );
            }
            try {
              const answer = JSON.parse(stdout) as { accessToken?: unknown; expires_on?: unknown; expiresOn?: unknown };
              if (typeof answer.accessToken !== 'string' || answer.accessToken === '') throw new Error('no accessToken in its answer');
              const seconds = Number(answer.expires_on);
              const expiration =
                Number.isFinite(seconds) && seconds > 0
                  ? new Date(seconds * 1000)
                  : typeof answer.expiresOn === 'string'
                    ? new Date(answer.expiresOn)
                    : undefined;
              resolve({ token: answer.accessToken, ...(expiration && !Number.isNaN(expiration.getTime()) ? { expiration } : {}) });
            } catch (e) {
              reject(new Error(`az account get-access-token answered what is not a token: ${(e as Error).message}`));
            }
          },
        );
      }),
  );
  return async () => (await token()).token;
}
