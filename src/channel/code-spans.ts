const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})/;

/**
 * The text with Markdown code (fenced blocks and inline code spans) replaced by spaces, so that
 * offsets stay where they were and nothing inside code is read as a mention.
 */
export function maskCode(text: string): string {
  const lines = text.split('\n');
  let fence: string | undefined;
  const masked = lines.map((line) => {
    if (fence !== undefined) {
      const close = new RegExp(`^ {0,3}${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
      if (close.test(line)) fence = undefined;
      return blank(line);
    }
    const open = FENCE_OPEN.exec(line);
    if (open) {
      fence = open[1]!;
      return blank(line);
    }
    return line;
  });
  return maskInlineCode(masked.join('\n'));
}

/** Masks `code` spans: a run of n backticks up to the next run of exactly n backticks. */
function maskInlineCode(text: string): string {
  let out = '';
  let from = 0;
  for (let i = text.indexOf('`'); i !== -1; i = text.indexOf('`', i)) {
    const run = runLength(text, i);
    const close = findRun(text, i + run, run);
    if (close === -1) {
      i += run; // no closing run: the backticks are text
      continue;
    }
    out += text.slice(from, i) + blank(text.slice(i, close + run));
    i = from = close + run;
  }
  return out + text.slice(from);
}

function runLength(text: string, at: number): number {
  let n = 0;
  while (text[at + n] === '`') n++;
  return n;
}

function findRun(text: string, from: number, length: number): number {
  for (let i = from; i < text.length; ) {
    if (text[i] !== '`') {
      i++;
      continue;
    }
    const run = runLength(text, i);
    if (run === length) return i;
    i += run;
  }
  return -1;
}

function blank(text: string): string {
  return text.replace(/[^\n]/g, ' ');
}

/**
 * Text shown as it is, in a fenced block whose fence is longer than any run of backticks in it:
 * no line of it (a diff's `--- a/app.js`, a `</details>`, a fence of its own) can close the block.
 */
export function fenced(text: string, info = 'text'): string {
  const fence = '`'.repeat(Math.max(3, longestRun(text) + 1));
  return `${fence}${info}\n${text}\n${fence}`;
}

/** The length of the longest run of backticks in `text`: counted in one pass, whatever the number of runs (no argument list to overflow). */
export function longestRun(text: string): number {
  let longest = 0;
  for (let i = text.indexOf('`'); i !== -1; ) {
    const run = runLength(text, i);
    if (run > longest) longest = run;
    i = text.indexOf('`', i + run);
  }
  return longest;
}
