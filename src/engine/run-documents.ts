import type { Channel, DocumentView } from '../channel/channel.js';
import { MAX_DOCUMENT_CHARS, plural, type DocumentSpec } from '../channel/document.js';
import { loadMergeTools, unmaskedText } from '../channel/documents.js';
import type { Workspace } from '../agents/tools/workspace-root.js';
import { readStart, writeWhole } from '../agents/tools/workspace.js';
import type { Scope } from '../workflow/evaluate.js';
import { fillTemplate } from '../workflow/fill.js';
import type { Workflow } from '../workflow/load.js';
import type { Journal } from './replay/journal.js';
import { SetupError } from './setup-error.js';

/**
 * The workflow's documents (docs/workflow.md: documents) at the start of a run and at its end:
 * opened in the channel with their first text, and written to their `write_to` files.
 */

/**
 * Opens each document at version 1: its `text` interpolated, or its `file` read from the workspace
 * through the tool boundary. A resumed or replayed run takes the text its recording opened with,
 * so a file changed since (by the agents, or by `write_to`) does not change the run.
 */
export async function openDocuments(workflow: Workflow, scope: Scope, workspace: Workspace, journal: Journal, channel: Channel): Promise<FirstTexts> {
  const firsts: FirstTexts = new Map();
  if (!workflow.spec.documents) return firsts;
  await loadMergeTools();
  for (const [name, declared] of Object.entries(workflow.spec.documents ?? {})) {
    const template = workflow.templates.get(`documents.${name}.text`);
    const read = () => (template ? fillTemplate(template, scope) : declared.file ? readDocumentFile(workspace, name, declared.file) : '');
    const recorded = journal.recorded.openedDocument(name);
    // A resumed run's recorded first text is masked: the real one is read again for write_to.
    if (recorded !== undefined && declared.write_to) firsts.set(name, { recorded, real: attempt(read) });
    const text = recorded ?? read();
    if (text.length > MAX_DOCUMENT_CHARS)
      throw new SetupError(
        `documents.${name} starts ${plural(text.length, 'character')} long: a document holds at most ${plural(MAX_DOCUMENT_CHARS, 'character')}`,
      );
    const spec: DocumentSpec = { name, owner: declared.owner, mode: declared.mode ?? 'edit', text };
    channel.documents.open(spec);
  }
  return firsts;
}

/** The first texts of a resumed run's documents that are written back: as recorded (masked), and as read again now. */
export type FirstTexts = Map<string, { recorded: string; real: string | undefined }>;

function attempt(read: () => string): string | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

function readDocumentFile(workspace: Workspace, name: string, path: string): string {
  let read: { data: Buffer; size: number };
  try {
    // One byte past the limit in characters is enough to know it is too long.
    read = readStart(workspace, path, MAX_DOCUMENT_CHARS * 4 + 1);
  } catch (e) {
    throw new SetupError(`documents.${name}.file: cannot read ${path}: ${(e as Error).message}`);
  }
  if (read.size > read.data.length)
    throw new SetupError(`documents.${name}.file ${path} is ${plural(read.size, 'byte')}: a document holds at most ${plural(MAX_DOCUMENT_CHARS, 'character')}`);
  if (read.data.includes(0)) throw new SetupError(`documents.${name}.file ${path} is a binary file: a document is text`);
  return read.data.toString('utf8');
}

/**
 * Writes each document with `write_to` into the workspace, through the tool boundary; what could
 * not be written, with why. A resumed run rebuilt its documents from a recording whose secrets
 * are masked: it writes the real text, restored from the first text read again, or nothing.
 */
export function writeDocuments(
  workflow: Workflow,
  documents: Record<string, DocumentView>,
  workspace: Workspace,
  firsts: FirstTexts = new Map(),
  mask?: (text: string) => string,
): string[] {
  const problems: string[] = [];
  for (const [name, declared] of Object.entries(workflow.spec.documents ?? {})) {
    const document = documents[name];
    if (!declared.write_to || !document) continue;
    const first = firsts.get(name);
    const real = first && mask ? unmaskedText(first.real, first.recorded, document.text, mask) : { text: document.text };
    if ('lost' in real) {
      problems.push(`documents.${name}.write_to: not written to ${declared.write_to}: ${real.lost} (the session holds its text, masked)`);
      continue;
    }
    try {
      writeWhole(workspace, declared.write_to, real.text);
    } catch (e) {
      problems.push(`documents.${name}.write_to: cannot write ${declared.write_to}: ${(e as Error).message}`);
    }
  }
  return problems;
}
