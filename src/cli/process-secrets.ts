/** Names of variables whose values are secrets (docs/security.md). */
export const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASS|CREDENTIAL|AUTH|PRIVATE/i;

/** Values of secret-looking process variables that are flags, not secrets: masking them would mask ordinary words. */
const NOT_SECRET = /^(true|false|yes|no|on|off|null|none|undefined|\d{1,7})$/i;

/** A secret-looking process variable shorter than this is taken for a setting, not a secret. */
const MIN_ENV_SECRET = 8;

/** The values of the process's variables whose names look secret (the API key among them). */
export function processSecrets(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.entries(env).flatMap(([name, value]) =>
    SECRET_NAME.test(name) && value && value.length >= MIN_ENV_SECRET && !NOT_SECRET.test(value) ? [value] : [],
  );
}
