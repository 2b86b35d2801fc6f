/**
 * A session is hostile input: every text it holds reaches the page through these, as text, never
 * as markup; a URL only as a link a person may follow (https, never fetched when the page opens).
 */
const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text for an element's content. Characters HTML cannot hold are replaced, not passed on. */
export function html(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ud800-\udfff]/gu, '\ufffd');
}

/** Text for an attribute's value in double quotes. */
export const attr = html;

/** An https URL as an attribute value, or undefined: a session's `javascript:`, `data:` or `http:` is no link. */
export function safeUrl(url: string | null | undefined): string | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' && !parsed.username && !parsed.password ? attr(parsed.href) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An element id for an agent: letters, digits, - and _ only, so that no name can close the
 * attribute or collide with the page's own; any other character (`_` too) as `_HEX_`, so that two
 * names never share an id.
 */
export function idOf(agent: string): string {
  return `agent-${agent.replace(/[^A-Za-z0-9-]/gu, (c) => `_${c.codePointAt(0)!.toString(16)}_`)}`;
}
