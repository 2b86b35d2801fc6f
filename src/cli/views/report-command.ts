import { statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { EXIT } from '../../exit-codes.js';
import { reportModel } from '../../report/report-model.js';
import { reportPage } from '../../report/report-page.js';
import { readSession, SessionFileError } from '../../session/reader.js';
import { asUsageError, UsageError } from '../usage-error.js';
import { writeWhole } from '../write-whole.js';
import { thousands } from '../../thousands.js';

/** Above this, the page holds the essentials only (no model calls, the first and last messages): a page a browser opens. */
const WHOLE_BYTES = 32 * 1024 * 1024;
/** Above this, no page is made: the session is read whole to make one. */
const MOST_BYTES = 512 * 1024 * 1024;
const KEPT_MESSAGES = 200;

/** The report page of a session (docs/report.md), from the session alone. */
export function reportHtml(file: string): string {
  let bytes: number;
  try {
    bytes = statSync(file).size;
  } catch {
    throw new UsageError(`cannot read ${file}: no such file`);
  }
  if (bytes > MOST_BYTES)
    throw new UsageError(`${file} is ${mb(bytes)}: a report is made of sessions up to ${mb(MOST_BYTES)}; conclave show --format json ${file} prints it`);
  const record = asUsageError(() => readSession(file), SessionFileError);
  if (bytes <= WHOLE_BYTES) return reportPage(reportModel(record));
  const model = reportModel(record, { details: false });
  const { messages } = model.summary;
  const left = messages.length - KEPT_MESSAGES;
  if (left > 0) model.summary.messages = [...messages.slice(0, KEPT_MESSAGES / 2), ...messages.slice(-KEPT_MESSAGES / 2)];
  model.leftOut =
    `The session is ${mb(bytes)}: this page shows its essentials, without the model calls` +
    `${left > 0 ? ` and ${count(left)} of its ${count(messages.length)} messages (the first and last ${KEPT_MESSAGES / 2} are here)` : ''}; ` +
    `conclave show ${basename(file)} prints all of it.`;
  return reportPage(model);
}

/** `conclave report SESSION [-o FILE]`: the page, written whole beside the session (or to FILE). */
export function reportCommand(file: string, options: { output?: string }): number {
  const out = options.output ?? join(dirname(file), `${basename(file).replace(/\.jsonl$/, '')}.html`);
  // The page never takes the session's place: a report loses nothing.
  if (resolve(out) === resolve(file) || sameFile(out, file)) throw new UsageError(`the page would overwrite the session ${file}: give -o another file`);
  const page = reportHtml(file);
  try {
    writeWhole(out, page);
  } catch (e) {
    throw new UsageError(`cannot write ${out}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such directory' : (e as Error).message}`);
  }
  process.stdout.write(`${out}\n`);
  return EXIT.ok;
}

/** Whether two names are one file (a link to it, another path to it): compared as files, not as names. */
function sameFile(a: string, b: string): boolean {
  try {
    const x = statSync(a);
    const y = statSync(b);
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

const count = thousands;

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(0)} MB`;
}
