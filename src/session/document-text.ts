/** The text after an append: entries end with a newline, and the next starts on a line of its own. */
export function appended(text: string, entry: string): string {
  return `${text}${text === '' || text.endsWith('\n') ? '' : '\n'}${entry}`;
}
