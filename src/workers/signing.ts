import { createHmac, timingSafeEqual } from 'node:crypto';
import { UsageError } from '../conclave-error.js';

/** The variable that holds the secret a coordinator and its workers share (docs/security.md: workers). */
export const WORKERS_SECRET = 'CONCLAVE_WORKERS_SECRET';

/** Shorter than this, a secret could be guessed: `openssl rand -hex 32` gives 64 characters. */
const MIN_SECRET_LENGTH = 32;

/** The shared secret from the environment, or a usage error that says how to set it. */
export function workersSecret(env: NodeJS.ProcessEnv): string {
  const secret = env[WORKERS_SECRET]?.trim() ?? '';
  if (secret === '') {
    throw new UsageError(
      `--workers needs ${WORKERS_SECRET}: the same random value (at least ${MIN_SECRET_LENGTH} characters, such as the output of \`openssl rand -hex 32\`) ` +
        "on the coordinator and every worker, so that no one else who can write the Redis can hand a worker a turn (the Action's input workers-secret)",
    );
  }
  if (secret.length < MIN_SECRET_LENGTH)
    throw new UsageError(
      `${WORKERS_SECRET} is ${secret.length} characters long: it must have at least ${MIN_SECRET_LENGTH} (\`openssl rand -hex 32\` makes one)`,
    );
  return secret;
}

/** What crosses the Redis: a body as its exact JSON text, and the MAC of that text in its place. */
interface Sealed {
  body: string;
  mac: string;
}

/**
 * Authenticates what a coordinator and its workers say to each other through Redis (HMAC-SHA256
 * with the shared secret). Each MAC covers the place the message is meant for (the job, the list),
 * so a message copied to another job or another worker's list does not open there.
 */
export class Signer {
  constructor(private readonly secret: string) {}

  seal(place: string, value: unknown): Sealed {
    const body = JSON.stringify(value);
    return { body, mac: this.mac(place, body) };
  }

  /** The value sealed for `place`, or undefined when `sealed` is not one (forged, altered, or meant for another place). */
  open(place: string, sealed: unknown): unknown {
    if (typeof sealed !== 'object' || sealed === null) return undefined;
    const { body, mac } = sealed as Partial<Sealed>;
    if (typeof body !== 'string' || typeof mac !== 'string') return undefined;
    const expected = Buffer.from(this.mac(place, body), 'hex');
    const given = Buffer.from(mac, 'hex');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      return JSON.parse(body) as unknown;
    } catch {
      return undefined;
    }
  }

  /** A sealed message as the text pushed on a list. */
  sealText(place: string, value: unknown): string {
    return JSON.stringify(this.seal(place, value));
  }

  /** The value of a list's text sealed for `place`, or undefined. */
  openText(place: string, text: string): unknown {
    try {
      return this.open(place, JSON.parse(text));
    } catch {
      return undefined;
    }
  }

  private mac(place: string, body: string): string {
    return createHmac('sha256', this.secret).update(place).update('\n').update(body).digest('hex');
  }
}
