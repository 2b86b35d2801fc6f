import { withoutCredentials } from '../../provider/stores/store-url.js';

/** Where spans go, as the user may see it: scheme, host and port (no user, password, path or query). */
export function collectorHost(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    return `${url.protocol}//${url.host}`;
  } catch {
    return 'the OTLP endpoint';
  }
}

/** An exporter's error text, with the endpoint's credentials taken out. */
export function collectorError(text: string, endpoint: string): string {
  let hidden = withoutCredentials(text, endpoint);
  try {
    const url = new URL(endpoint);
    for (const secret of [url.password, url.username, ...[...url.searchParams.values()]])
      if (secret.length >= 4) hidden = hidden.replaceAll(secret, '***').replaceAll(encodeURIComponent(secret), '***');
  } catch {
    // Not a URL: nothing more to take out.
  }
  return hidden;
}
