import { ChannelError } from './channel-error.js';
import type { ChannelEvent } from './channel-events.js';
import { fenced } from './code-spans.js';
import {
  appended,
  entryOf,
  MAX_DOCUMENT_CHARS,
  MAX_WHY_CHARS,
  plural,
  type DocumentMode,
  type DocumentSpec,
  type EditSpec,
  type EditStatus,
} from './document.js';

export type DocumentEvent = Extract<ChannelEvent, { type: 'document_opened' | 'document_changed' | 'document_appended' | 'edit_proposed' | 'edit_closed' }>;

type MergeTools = typeof import('./merge.js');
let mergeTools: MergeTools | undefined;

/** Loads the diff and merge libraries (about 12 ms at start): only a run with documents needs them. */
export async function loadMergeTools(): Promise<void> {
  mergeTools ??= await import('./merge.js');
}

/** The real text of a resumed run's document, where it can be restored (merge.ts). */
export function unmaskedText(...args: Parameters<MergeTools['unmaskedText']>): ReturnType<MergeTools['unmaskedText']> {
  return merging().unmaskedText(...args);
}

function merging(): MergeTools {
  if (!mergeTools) throw new Error('the merge tools were not loaded (loadMergeTools)');
  return mergeTools;
}

interface DocumentState {
  spec: DocumentSpec;
  /** The text of each version, version 1 first. */
  versions: string[];
  edits: number;
}

interface EditState extends EditSpec {
  status: EditStatus;
}

/** A document as the run ends with it: `--json`, outputs, the job summary and `write_to`. */
export interface DocumentView {
  owner: string;
  mode: DocumentMode;
  version: number;
  text: string;
  /** Edits still waiting for the owner's review. */
  open_edits: string[];
}

/**
 * A channel's documents with an owner (docs/workflow.md: documents). Their state changes only by
 * the channel's document events, so that replaying them rebuilds it; the methods check what an
 * agent asks, emit the events, and tell the owner or the author in their inboxes.
 */
export class Documents {
  private readonly documents = new Map<string, DocumentState>();
  private readonly edits = new Map<string, EditState>();

  constructor(
    private readonly emit: (event: DocumentEvent) => void,
    private readonly tell: (text: string, recipients: string[]) => void,
    /** Throws a ChannelError unless `agent` is one of the channel's. */
    private readonly requireAgent: (agent: string) => void,
  ) {}

  apply(event: DocumentEvent): void {
    switch (event.type) {
      case 'document_opened':
        this.documents.set(event.document.name, { spec: event.document, versions: [event.document.text], edits: 0 });
        return;
      case 'document_changed':
        this.versionTo(event.document, event.version).versions.push(event.text);
        return;
      case 'document_appended': {
        const d = this.versionTo(event.document, event.version);
        d.versions.push(appended(current(d), event.text));
        return;
      }
      case 'edit_proposed':
        this.require(event.edit.document).edits++;
        this.edits.set(event.edit.id, { ...event.edit, status: 'open' });
        return;
      case 'edit_closed':
        this.requireEdit(event.edit).status = event.status;
        return;
    }
  }

  get names(): string[] {
    return [...this.documents.keys()];
  }

  open(spec: DocumentSpec): void {
    this.requireAgent(spec.owner);
    if (this.documents.has(spec.name)) throw new ChannelError(`document "${spec.name}" is open already`);
    this.emit({ type: 'document_opened', document: spec });
  }

  read(agent: string, name: string): Record<string, unknown> {
    this.requireAgent(agent);
    const d = this.require(name);
    const open = [...this.edits.values()].filter((e) => e.document === name && e.status === 'open');
    return {
      document: name,
      owner: d.spec.owner,
      mode: d.spec.mode,
      version: d.versions.length,
      text: current(d),
      ...(open.length ? { open_edits: open.map((e) => ({ edit: e.id, author: e.author, base: e.base, why: e.why })) } : {}),
      ...(agent === d.spec.owner ? {} : { note: `only @${d.spec.owner} changes it: your edit_document waits for @${d.spec.owner}'s review` }),
    };
  }

  /** `agent`'s whole new text for `name`, made against `version`: the owner's applies at once, another agent's waits for the owner. */
  edit(agent: string, name: string, version: number, text: string, why: string): Record<string, unknown> {
    this.requireAgent(agent);
    const d = this.require(name);
    const { owner, mode } = d.spec;
    if (mode === 'append' && agent !== owner)
      throw new ChannelError(`"${name}" is an append document: add to it with append_document; only @${owner} edits it`);
    checkVersion(d, version);
    checkSize(`the text`, text);
    checkWhy(why);
    const base = d.versions[version - 1]!;
    if (text === base) throw new ChannelError(`the text is version ${version} of "${name}" unchanged: nothing to edit`);
    if (agent === owner) {
      const merged = this.merged(d, version, text, 'your edit');
      if ('conflict' in merged)
        throw new ChannelError(
          `your edit overlaps changes made since version ${version} (the document is at version ${d.versions.length}): nothing changed. Read it ` +
            `and edit again against version ${d.versions.length}. The conflict:\n${fenced(merged.conflict)}`,
        );
      if ('tooCostly' in merged)
        throw new ChannelError(
          `your edit cannot be merged with the changes made since version ${version}: ${merged.tooCostly}. Nothing changed: read it and edit ` +
            `again against version ${d.versions.length}`,
        );
      if (merged.text === current(d))
        throw new ChannelError(`your edit makes no change to version ${d.versions.length} of "${name}" (what it changes is there already): nothing changed`);
      this.change(d, agent, merged.text, why, null);
      return { document: name, version: d.versions.length, applied: true };
    }
    const id = `${name}#${d.edits + 1}`;
    this.emit({ type: 'edit_proposed', edit: { id, document: name, author: agent, base: version, text, why } });
    const at = d.versions.length === version ? '' : ` (the document is at version ${d.versions.length} now)`;
    this.tell(
      `Edit ${id} of document "${name}" from @${agent}, against version ${version}${at}: ${why || '(no reason given)'}\n` +
        `${shownChange(name, version, base, id, text)}\n` +
        `You own "${name}": accept or reject it with review_edit {"edit": "${id}", "accept": true or false, "why": "…"}.`,
      [owner],
    );
    return { edit: id, status: `waiting for @${owner}'s review: you will be told the outcome` };
  }

  /** The owner's review of an open edit: accepted edits are merged into the current version; one that overlaps later changes is refused with its conflict. */
  review(agent: string, id: string, accept: boolean, why: string): Record<string, unknown> {
    this.requireAgent(agent);
    const edit = this.requireEdit(id);
    const d = this.require(edit.document);
    const { owner } = d.spec;
    if (agent !== owner) throw new ChannelError(`only @${owner}, who owns "${edit.document}", reviews its edits`);
    if (edit.status !== 'open') throw new ChannelError(`edit ${id} is closed already (${edit.status})`);
    checkWhy(why);
    const reason = why ? `: ${why}` : '';
    if (!accept) {
      this.emit({ type: 'edit_closed', edit: id, status: 'rejected', reviewer: agent, why });
      this.tell(`Your edit ${id} of "${edit.document}" was rejected by @${agent}${reason}. It did not change the document.`, [edit.author]);
      return { edit: id, status: 'rejected' };
    }
    const merged = this.merged(d, edit.base, edit.text, id);
    if (!('text' in merged)) {
      const now = d.versions.length;
      this.emit({ type: 'edit_closed', edit: id, status: 'conflict', reviewer: agent, why });
      const since = `changes made since version ${edit.base}, its base (the document is at version ${now})`;
      const cause = 'conflict' in merged ? `it overlaps ${since}` : `with the ${since}, ${merged.tooCostly}`;
      this.tell(
        `Your edit ${id} of "${edit.document}" could not be merged: ${cause}. ` +
          `It did not change the document: read it with read_document and edit again against version ${now}.` +
          `${'conflict' in merged ? ` The conflict:\n${fenced(merged.conflict)}` : ''}`,
        [edit.author],
      );
      const note = `not merged; @${edit.author} is told to edit again against version ${now}`;
      return { edit: id, status: 'conflict', note, ...('conflict' in merged ? { conflict: merged.conflict } : { why: merged.tooCostly }) };
    }
    this.emit({ type: 'edit_closed', edit: id, status: 'accepted', reviewer: agent, why });
    if (merged.text !== current(d)) this.change(d, edit.author, merged.text, edit.why, id);
    const version = d.versions.length;
    this.tell(`Your edit ${id} of "${edit.document}" was accepted by @${agent}${reason}. "${edit.document}" is at version ${version}.`, [edit.author]);
    return { edit: id, status: 'accepted', version };
  }

  /** An entry added to an append document, by anyone. */
  append(agent: string, name: string, text: string): Record<string, unknown> {
    this.requireAgent(agent);
    const d = this.require(name);
    if (d.spec.mode !== 'append') throw new ChannelError(`"${name}" is not an append document: change it with edit_document`);
    if (text.trim() === '') throw new ChannelError('the entry is empty');
    const entry = entryOf(text);
    const after = appended(current(d), entry).length;
    if (after > MAX_DOCUMENT_CHARS)
      throw new ChannelError(
        `this entry would make "${name}" ${plural(after, 'character')} long: a document holds at most ${plural(MAX_DOCUMENT_CHARS, 'character')}`,
      );
    this.emit({ type: 'document_appended', document: name, version: d.versions.length + 1, author: agent, text: entry });
    return { document: name, version: d.versions.length };
  }

  final(): Record<string, DocumentView> {
    const open = this.openEdits();
    return Object.fromEntries(
      [...this.documents].map(([name, d]) => [
        name,
        {
          owner: d.spec.owner,
          mode: d.spec.mode,
          version: d.versions.length,
          text: current(d),
          open_edits: open.filter((e) => e.document === name).map((e) => e.id),
        },
      ]),
    );
  }

  /** The edits that wait for their owner, in the order they were made, with the owner. */
  openEdits(): (EditSpec & { owner: string })[] {
    return [...this.edits.values()].filter((e) => e.status === 'open').map((e) => ({ ...e, owner: this.require(e.document).spec.owner }));
  }

  private merged(d: DocumentState, version: number, text: string, editLabel: string) {
    const now = d.versions.length;
    const merged = merging().mergeEdit(current(d), d.versions[version - 1]!, text, {
      current: `version ${now} (now)`,
      base: `version ${version} (the edit's base)`,
      edit: editLabel,
    });
    if ('text' in merged) checkSize('the merged text', merged.text);
    return merged;
  }

  private change(d: DocumentState, author: string, text: string, why: string, edit: string | null): void {
    this.emit({ type: 'document_changed', document: d.spec.name, version: d.versions.length + 1, author, text, why, edit });
  }

  private require(name: string): DocumentState {
    const d = this.documents.get(name);
    if (d) return d;
    throw new ChannelError(`there is no document "${name}"; the documents are ${this.names.map((n) => `"${n}"`).join(', ')}`);
  }

  private requireEdit(id: string): EditState {
    const edit = this.edits.get(id);
    if (edit) return edit;
    const open = [...this.edits.values()].filter((e) => e.status === 'open').map((e) => e.id);
    throw new ChannelError(`there is no edit "${id}"${open.length ? `; open edits: ${open.join(', ')}` : '; no edit is open'}`);
  }

  /** The document, checked to be at the version before `version` (the events come in order). */
  private versionTo(name: string, version: number): DocumentState {
    const d = this.require(name);
    if (version !== d.versions.length + 1) throw new Error(`document "${name}" version ${version} out of order: expected ${d.versions.length + 1}`);
    return d;
  }
}

/** The owner's view of an edit: a unified diff from its base, or, for a change too large to diff, the edit's whole text. */
function shownChange(name: string, version: number, base: string, id: string, text: string): string {
  const diff = merging().unifiedDiff(`${name} version ${version}`, base, id, text);
  if (diff !== undefined) return fenced(diff, 'diff');
  return `It changes too many lines to show as a diff; its whole text:\n${fenced(text)}`;
}

function current(d: DocumentState): string {
  return d.versions[d.versions.length - 1]!;
}

function checkVersion(d: DocumentState, version: number): void {
  const now = d.versions.length;
  if (!Number.isInteger(version) || version < 1 || version > now)
    throw new ChannelError(`"${d.spec.name}" has no version ${version}: its versions are 1 to ${now} (read_document gives the current one)`);
}

function checkSize(what: string, text: string): void {
  if (text.length > MAX_DOCUMENT_CHARS)
    throw new ChannelError(`${what} is ${plural(text.length, 'character')} long: a document holds at most ${plural(MAX_DOCUMENT_CHARS, 'character')}`);
}

function checkWhy(why: string): void {
  if (why.length > MAX_WHY_CHARS)
    throw new ChannelError(`"why" is ${plural(why.length, 'character')} long: keep it within ${plural(MAX_WHY_CHARS, 'character')}`);
}
