/**
 * A document with an owner (docs/workflow.md: documents): shared text the team changes only
 * through the owner. `edit`: the owner's edits apply at once, another agent's wait for the owner's
 * review; `append`: anyone adds entries, kept in order.
 */
export type DocumentMode = 'edit' | 'append';

export interface DocumentSpec {
  name: string;
  owner: string;
  mode: DocumentMode;
  /** Version 1's text. */
  text: string;
}

/** An edit waiting for the owner: its id is `NAME#N`, numbered per document from 1. */
export interface EditSpec {
  id: string;
  document: string;
  author: string;
  /** The version it was made against. */
  base: number;
  text: string;
  why: string;
}

export type EditStatus = 'open' | 'accepted' | 'rejected' | 'conflict';

/** The most characters a document (and so an edit's text) may hold. */
export const MAX_DOCUMENT_CHARS = 100_000;
/** The most characters of an edit's or a review's `why`. */
export const MAX_WHY_CHARS = 2_000;

export { appended } from '../session/document-text.js';
import { thousands } from '../thousands.js';

/** An entry as it is kept: ending with a newline. */
export function entryOf(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

export function plural(n: number, word: string): string {
  return `${thousands(n)} ${word}${n === 1 ? '' : 's'}`;
}
