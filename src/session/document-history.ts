import { appended } from './document-text.js';
import type { SessionEvent } from './format.js';

/** A document with an owner (docs/workflow.md: documents): how it ends, and every change and review, in order. */
export interface DocumentSummary {
  name: string;
  owner: string;
  mode: string;
  version: number;
  text: string;
  history: DocumentStep[];
  /** Edits that were never reviewed. */
  open_edits: string[];
  /** Edits the owner accepted that conflicted and did not land. */
  conflicts: string[];
}

/** One step of a document's history: `version` when it made one. */
export interface DocumentStep {
  version: number | null;
  agent: string;
  what: 'opened' | 'edited' | 'merged' | 'appended' | 'proposed' | 'accepted' | 'rejected' | 'conflict';
  edit: string | null;
  why: string;
  /** What the step changed, in lines: against the version before (a proposal: against the version it was made on). */
  lines?: { added: number; removed: number };
}

type DocumentEvent = Extract<SessionEvent, { type: 'document_opened' | 'document_changed' | 'document_appended' | 'edit_proposed' | 'edit_closed' }>;

/** What `show` and the job summary tell of the documents: each one's history, folded from the session's document events. */
export class DocumentHistories {
  private readonly documents = new Map<string, DocumentSummary>();
  /** The document of each edit, by its id. */
  private readonly editsOf = new Map<string, string>();
  /** Each document's text at each version, by `NAME\0VERSION`: what a proposal was made on. */
  private readonly versions = new Map<string, string>();

  apply(e: DocumentEvent): void {
    switch (e.type) {
      case 'document_opened': {
        const { name, owner, mode, text } = e.document;
        const history: DocumentStep[] = [{ version: 1, agent: owner, what: 'opened', edit: null, why: '' }];
        this.documents.set(name, { name, owner, mode, version: 1, text, history, open_edits: [], conflicts: [] });
        this.versions.set(`${name}\0${1}`, text);
        return;
      }
      case 'document_changed':
      case 'document_appended': {
        const d = this.documents.get(e.document);
        if (!d) return;
        const before = d.text;
        d.version = e.version;
        d.text = e.type === 'document_changed' ? e.text : appended(d.text, e.text);
        this.versions.set(`${d.name}\0${e.version}`, d.text);
        const what = e.type === 'document_appended' ? 'appended' : e.edit ? 'merged' : 'edited';
        d.history.push({
          version: e.version,
          agent: e.author,
          what,
          edit: e.type === 'document_changed' ? e.edit : null,
          why: e.type === 'document_changed' ? e.why : '',
          lines: changedLines(before, d.text),
        });
        return;
      }
      case 'edit_proposed': {
        const d = this.documents.get(e.edit.document);
        if (!d) return;
        this.editsOf.set(e.edit.id, e.edit.document);
        const base = this.versions.get(`${d.name}\0${e.edit.base}`);
        d.history.push({
          version: null,
          agent: e.edit.author,
          what: 'proposed',
          edit: e.edit.id,
          why: e.edit.why,
          ...(base !== undefined ? { lines: changedLines(base, e.edit.text) } : {}),
        });
        d.open_edits.push(e.edit.id);
        return;
      }
      case 'edit_closed': {
        const d = this.documents.get(this.editsOf.get(e.edit) ?? '');
        if (!d) return;
        d.history.push({ version: null, agent: e.reviewer, what: e.status, edit: e.edit, why: e.why });
        d.open_edits = d.open_edits.filter((id) => id !== e.edit);
        if (e.status === 'conflict') d.conflicts.push(e.edit);
        return;
      }
    }
  }

  all(): DocumentSummary[] {
    return [...this.documents.values()];
  }
}

/**
 * Lines added and removed from one text to the next, counted as multisets of lines: linear in
 * the texts' size (a diff is not, and a history may hold many 100,000-character versions), exact
 * for what is added or removed, blind only to lines that merely moved.
 */
export function changedLines(before: string, after: string): { added: number; removed: number } {
  const count = new Map<string, number>();
  for (const line of before.split('\n')) count.set(line, (count.get(line) ?? 0) + 1);
  let added = 0;
  for (const line of after.split('\n')) {
    const left = count.get(line) ?? 0;
    if (left > 0) count.set(line, left - 1);
    else added++;
  }
  let removed = 0;
  for (const left of count.values()) removed += left;
  return { added, removed };
}
