import { rmSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * A file written whole or not at all (a page, a JUnit report, a kept recording): the text goes to a
 * temporary file beside it, renamed over it once written, so that no reader ever sees half of it.
 * A temporary file that could not be renamed is removed.
 */
export function writeWhole(path: string, text: string): void {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(temporary, text);
    renameSync(temporary, path);
  } catch (e) {
    rmSync(temporary, { force: true });
    throw e;
  }
}
