/**
 * A store's URL as the user may see it, and a driver's message with the URL's credentials taken
 * out: for --cache and --coordinate alike (a URL may carry a password, in its authority or its query).
 */

export const DEFAULT_CACHE = '.conclave/cache.sqlite';

/** The spec as the user may see it: a URL's user and password hidden, in the authority (up to its last `@`) and in the query. */
export function shownSpec(spec: string | true): string {
  if (spec === true) return DEFAULT_CACHE;
  let shown = spec.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1***@');
  for (const value of queryCredentials(spec)) shown = shown.replaceAll(value, '***');
  return shown;
}

/** Values of credential-like query parameters (`?password=…`, `sslkey=…`), raw as written. */
function queryCredentials(spec: string): string[] {
  const query = spec.split('?')[1]?.split('#')[0] ?? '';
  return query.split('&').flatMap((pair) => {
    const [name = '', value = ''] = pair.split('=');
    return /pass|secret|token|key|auth|cred/i.test(name) && value.length > 0 ? [value] : [];
  });
}

/** An error text from a store's driver, with the spec's credentials hidden. */
export function withoutCredentials(text: string, spec: string | true): string {
  if (spec === true) return text;
  let hidden = text.replaceAll(spec, shownSpec(spec));
  const userinfo = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)@/i.exec(spec)?.[1] ?? '';
  const password = userinfo.includes(':') ? userinfo.slice(userinfo.indexOf(':') + 1) : '';
  for (const secret of [password, ...queryCredentials(spec)].flatMap((p) => [p, safeDecode(p)])) {
    if (secret.length >= 4) hidden = hidden.replaceAll(secret, '***');
  }
  return hidden;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
