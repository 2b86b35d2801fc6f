import { fenced, longestRun } from '../channel/code-spans.js';

export { fenced };

/**
 * Text that a model or a session file made, as it may stand inside one line of Markdown (a
 * heading, a sentence, a `<summary>`): no HTML survives (`<` `>` `&` as entities), no link, image,
 * code span or emphasis can open (`[` `]` `` ` `` `*` `\\` escaped), no table cell can end (`|`), and
 * no line can break, so nothing it says can forge a heading, hide the report or add a chart.
 */
export function inline(text: string): string {
  return cell(text).replace(/<br>/g, ' ');
}

/** Such text for a Markdown table cell: as `inline`, with line breaks as <br>. */
export function cell(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/[\\`*[\]|]/g, '\\$&')
    .replace(/\r\n|[\r\n\u2028\u2029]/g, '<br>');
}

/** Such text as a code span in a table cell: a fence longer than any run of backticks in it, pipes escaped, on one line. */
export function codeCell(text: string): string {
  const flat = text.replace(/\r\n|[\r\n\u2028\u2029]/g, ' ').replace(/\|/g, '\\|');
  const fence = '`'.repeat(longestRun(flat) + 1);
  return flat.startsWith('`') || flat.endsWith('`') ? `${fence} ${flat} ${fence}` : `${fence}${flat}${fence}`;
}

/**
 * Such text as a label in a Mermaid chart: only letters, digits, space, `.`, `_`, `@` and `-`, so
 * no directive (`%%{init}%%`), comment, `click … href`, new line or `:` can reach the chart's syntax.
 */
export function mermaidLabel(text: string): string {
  return text.replace(/[^A-Za-z0-9 ._@-]/g, '_').slice(0, 80) || '_';
}

export function dollars(n: number): string {
  return `$${n.toFixed(4)}`;
}
