/**
 * In GitHub Actions the runner reads every line a step prints and runs the ones that look like
 * workflow commands: a line whose first non-blank characters are `::` (`::add-mask::`,
 * `::stop-commands::`, `::error file=…::`), and, in the older form, any line holding `##[`.
 * Model text (messages, the summary, outputs) must never be read as one (docs/security.md).
 *
 * Once guarded, everything written to stdout and stderr passes through a filter that puts an
 * invisible U+200B before such a line's first `:` and inside each `##[`, so the runner reads text;
 * only conclave's own commands, written with `writeCommand`, pass unchanged. The filter keeps its
 * state across writes, so a command split over two writes is caught too.
 */

const MARK = '\u200b';
let trusted = false;

interface LineState {
  /** Only blanks since the last line break. */
  atLineStart: boolean;
  /** How many `#` end what was written so far. */
  hashes: number;
}

/** Neutralises `text`, continuing from `state` (updated). */
export function neutralise(text: string, state: LineState): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 || c === 13) {
      state.atLineStart = true;
      state.hashes = 0;
      continue;
    }
    if (state.atLineStart) {
      if (
        c === 32 ||
        c === 9 ||
        c === 11 ||
        c === 12 ||
        c === 0xa0 ||
        (c >= 0x2000 && c <= 0x200a) ||
        c === 0x3000 ||
        c === 0x1680 ||
        c === 0x2028 ||
        c === 0x2029 ||
        c === 0x202f ||
        c === 0x205f ||
        c === 0x85
      )
        continue;
      state.atLineStart = false;
      if (c === 58 /* : */) {
        out += text.slice(from, i) + MARK;
        from = i;
        continue;
      }
    }
    if (c === 35 /* # */) {
      state.hashes++;
      continue;
    }
    if (c === 91 /* [ */ && state.hashes >= 2) {
      out += text.slice(from, i) + MARK;
      from = i;
    }
    state.hashes = 0;
  }
  return out + text.slice(from);
}

/** Installs the filter on stdout and stderr (each keeps its own line state). */
export function guardStreams(): void {
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write;
    const state: LineState = { atLineStart: true, hashes: 0 };
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      const out = trusted ? (neutralise(text, state), text) : neutralise(text, state);
      return (write as (...args: unknown[]) => boolean).call(stream, out, ...rest);
    }) as typeof stream.write;
  }
}

/** Writes one of conclave's own workflow commands, which the filter lets through (masked all the same). */
export function writeCommand(stream: NodeJS.WriteStream, text: string): void {
  trusted = true;
  try {
    stream.write(text);
  } finally {
    trusted = false;
  }
}

/**
 * JSON for stdout: `[` after `#` written as `\u005b`, the same JSON value, so that the guard has
 * nothing to mark inside a string (a value `##[x]` stays `##[x]` for whoever parses it).
 */
export function printableJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(/#\[/g, '#\\u005b');
}
