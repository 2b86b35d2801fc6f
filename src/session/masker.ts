/** The shortest secret that can be masked without masking ordinary text: shorter ones are refused. */
export const MIN_SECRET_LENGTH = 4;

const MASK = '***';

let shown: Masker | undefined;

/**
 * The masker in force for this process's output (cli/masked-streams.ts sets it). A message that
 * quotes a value cut short masks it first: once cut, a secret's head no longer matches its forms.
 */
export function setShownMasker(masker: Masker | undefined): void {
  shown = masker;
}

/** A text about to be cut short for a message, with every secret the process knows masked. */
export function maskBeforeCut(text: string): string {
  return shown ? shown.text(text) : text;
}

/**
 * Hides secrets in everything conclave writes (docs/design.md: secrets). It replaces a secret inside string
 * values only — never a key, a number or the structure — so no secret, however short, can
 * corrupt a file. It knows each secret's forms, as GitHub's runner does: the raw value, its
 * JSON-escaped form, its base64 forms (all three alignments), its URL-encoded form, and each line
 * of a secret of several lines.
 */
export class Masker {
  private readonly forms: string[];
  /** Each form as it shows inside a JSON line (escaped once more). */
  private readonly lineForms: string[];
  private loosePattern: RegExp | undefined;

  constructor(secrets: Iterable<string>) {
    const forms = new Set<string>();
    for (const secret of secrets) {
      if (secret.length < MIN_SECRET_LENGTH) continue;
      for (const value of [secret, ...secret.split(/\r?\n/).filter((line) => line.trim().length >= MIN_SECRET_LENGTH)]) {
        forms.add(value);
        forms.add(JSON.stringify(value).slice(1, -1));
        forms.add(encodeURIComponent(value));
        for (const b64 of base64Forms(value)) if (b64.length >= MIN_SECRET_LENGTH) forms.add(b64);
      }
    }
    // Longest first, so that a secret inside another is not masked half.
    this.forms = [...forms].sort((a, b) => b.length - a.length);
    this.lineForms = [...new Set(this.forms.flatMap((form) => [form, JSON.stringify(form).slice(1, -1)]))];
  }

  /**
   * Masks harder, for what a program outside conclave printed (an MCP server's output): a form
   * broken across lines (wrapped base64, a value printed in pieces) is found too, and the whole
   * run of base64 characters around a form is masked, not only the characters the form fixes.
   */
  loose(value: string): string {
    if (this.empty) return value;
    this.loosePattern ??= new RegExp(this.forms.map((form) => [...form].map(escapeRegExp).join('(?:\\r?\\n)?')).join('|'), 'g');
    const spans: [number, number][] = [];
    for (const m of value.matchAll(this.loosePattern)) {
      let start = m.index;
      let end = m.index + m[0].length;
      while (start > 0 && BASE64_CHAR.test(value[start - 1]!)) start--;
      while (end < value.length && (BASE64_CHAR.test(value[end]!) || value[end] === '=')) end++;
      const last = spans.at(-1);
      if (last && start <= last[1]) last[1] = Math.max(last[1], end);
      else spans.push([start, end]);
    }
    let out = '';
    let from = 0;
    for (const [start, end] of spans) {
      out += value.slice(from, start) + MASK;
      from = end;
    }
    return out + value.slice(from);
  }

  get empty(): boolean {
    return this.forms.length === 0;
  }

  /** A text with every form of every secret replaced by ***. */
  text(value: string): string {
    for (const form of this.forms) if (value.includes(form)) value = value.split(form).join(MASK);
    return value;
  }

  /** A copy of a JSON-like value whose string values (not keys) are masked. */
  value<T>(value: T): T {
    if (this.empty) return value;
    return walk(value, (s) => this.text(s)) as T;
  }

  /** The JSON line of a value, its strings masked. Cheap when nothing is secret: the line is checked first. */
  line(value: unknown): string {
    const line = JSON.stringify(value);
    if (this.empty || !this.lineForms.some((form) => line.includes(form))) return line;
    return JSON.stringify(this.value(value));
  }
}

const BASE64_CHAR = /[A-Za-z0-9+/]/;

function escapeRegExp(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function walk(value: unknown, mask: (s: string) => string): unknown {
  if (typeof value === 'string') return mask(value);
  if (Array.isArray(value)) return value.map((v) => walk(v, mask));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, mask)]));
  }
  return value;
}

/**
 * The base64 text a secret always shows as, whichever of the three byte offsets it starts at in
 * a longer base64 stream: the characters that depend on its bytes only.
 */
function base64Forms(secret: string): string[] {
  const bytes = Buffer.from(secret);
  const forms: string[] = [];
  for (const offset of [0, 1, 2]) {
    const total = offset + bytes.length;
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes])
      .toString('base64')
      .replace(/=+$/, '');
    const head = [0, 2, 3][offset]!;
    const tail = [0, 1, 1][total % 3]!;
    forms.push(encoded.slice(head, encoded.length - tail));
  }
  return forms;
}
