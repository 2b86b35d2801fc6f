import { MAX_DOCUMENT_CHARS } from '../../channel/document.js';
import { defineTool, input } from './define-tool.js';
import type { AgentTool, Shown, ToolContext, ToolResult } from './tool.js';
import { thousands } from '../../thousands.js';

/**
 * The tools of documents with an owner (docs/workflow.md: documents), given to every agent when
 * the workflow has documents. They act on the channel, so a resumed run runs them again.
 */

const json = (value: unknown): ToolResult => ({ content: JSON.stringify(value, null, 1) });

/** A result that shows a document's text: its reader is tainted when the document holds a stranger's words (engine/trust/taints.ts). */
function showing(result: ToolResult, what: Shown, shown: ToolContext['shown']): ToolResult {
  shown?.(what);
  return result;
}
const limit = `at most ${thousands(MAX_DOCUMENT_CHARS)} characters`;

export const readDocument = defineTool({
  name: 'read_document',
  description: "Read a team document: its text, version, owner, and the edits waiting for the owner's review.",
  readOnly: true,
  external: false,
  input: { name: input.string({ description: 'The document, as the workflow names it.' }) },
  run: ({ name }, { agent, channel, shown }) => showing(json(channel.documents.read(agent, name)), { document: name }, shown),
});

export const editDocument = defineTool({
  name: 'edit_document',
  description:
    `Change a team document: give its whole new text (${limit}) and the version you read. The owner's edit applies at once; anyone else's ` +
    "waits for the owner's review as an edit NAME#N, and you are told the outcome. Edits made against an older version are merged with the changes " +
    'since, unless they touch the same lines.',
  readOnly: false,
  external: false,
  input: {
    name: input.string({ description: 'The document.' }),
    version: input.integer({ minimum: 1, description: 'The version your text was made from (read_document gives it).' }),
    text: input.string({ description: 'The whole new text.' }),
    why: input.string({ description: 'Why, in a sentence or two: the owner reads it.' }),
  },
  // A merge's conflict shows the text of others' versions.
  run: ({ name, version, text, why }, { agent, channel, shown }) =>
    showing(json(channel.documents.edit(agent, name, version, text, why)), { document: name }, shown),
});

export const reviewEdit = defineTool({
  name: 'review_edit',
  description:
    'Accept or reject an edit waiting for your review, in a document you own. An accepted edit is merged into the current version; if it overlaps ' +
    'changes made since its base, it is not merged and its author is told to edit again.',
  readOnly: false,
  external: false,
  input: {
    edit: input.string({ description: 'The edit, such as "plan#1".' }),
    accept: input.boolean({ description: 'true to accept, false to reject.' }),
    why: input.string({ description: 'Why, for the author.' }),
  },
  run: ({ edit, accept, why }, { agent, channel, shown }) =>
    showing(json(channel.documents.review(agent, edit, accept, why)), { document: edit.slice(0, edit.lastIndexOf('#')) }, shown),
});

export const appendDocument = defineTool({
  name: 'append_document',
  description: `Add an entry to the end of an append document (anyone may; entries are kept in order; the document holds ${limit}).`,
  readOnly: false,
  external: false,
  input: {
    name: input.string({ description: 'The document.' }),
    text: input.string({ description: 'The entry.' }),
  },
  run: ({ name, text }, { agent, channel }) => json(channel.documents.append(agent, name, text)),
});

export const DOCUMENT_TOOLS: readonly AgentTool[] = [readDocument, editDocument, reviewEdit, appendDocument];
