/**
 * A model call that failed for good. `auth` and `outage` are the provider's failures (exit 4);
 * `request` is a request the API refused, such as an unknown model or a prompt too long (exit 1).
 */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly kind: 'auth' | 'outage' | 'request',
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The call was aborted on purpose: the run ended, hit its timeout, or got a signal. */
export class CallAborted extends Error {
  constructor() {
    super('the model call was aborted');
  }
}
