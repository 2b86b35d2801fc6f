import { appended } from '../channel/document.js';
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
}

/** One step of a document's history: `version` when it made one. */
export interface DocumentStep {
  version: number | null;
  agent: string;
  what: 'opened' | 'edited' | 'merged' | 'appended' | 'proposed' | 'accepted' | 'rejected' | 'conflict';
  edit: string | null;
  why: string;
}

type DocumentEvent = Extract<SessionEvent, { type: 'document_opened' | 'document_changed' | 'document_appended' | 'edit_proposed' | 'edit_closed' }>;

/** What `show` and the job summary tell of the documents: each one's history, folded from the session's document events. */
export class DocumentHistories {
  private readonly documents = new Map<string, DocumentSummary>();
  /** The document of each edit, by its id. */
  private readonly editsOf = new Map<string, string>();

  apply(e: DocumentEvent): void {
    switch (e.type) {
      case 'document_opened': {
        const { name, owner, mode, text } = e.document;
        const history: DocumentStep[] = [{ version: 1, agent: owner, what: 'opened', edit: null, why: '' }];
        this.documents.set(name, { name, owner, mode, version: 1, text, history, open_edits: [] });
        return;
      }
      case 'document_changed':
      case 'document_appended': {
        const d = this.documents.get(e.document);
        if (!d) return;
        d.version = e.version;
        d.text = e.type === 'document_changed' ? e.text : appended(d.text, e.text);
        const what = e.type === 'document_appended' ? 'appended' : e.edit ? 'merged' : 'edited';
        d.history.push({
          version: e.version,
          agent: e.author,
          what,
          edit: e.type === 'document_changed' ? e.edit : null,
          why: e.type === 'document_changed' ? e.why : '',
        });
        return;
      }
      case 'edit_proposed': {
        const d = this.documents.get(e.edit.document);
        if (!d) return;
        this.editsOf.set(e.edit.id, e.edit.document);
        d.history.push({ version: null, agent: e.edit.author, what: 'proposed', edit: e.edit.id, why: e.edit.why });
        d.open_edits.push(e.edit.id);
        return;
      }
      case 'edit_closed': {
        const d = this.documents.get(this.editsOf.get(e.edit) ?? '');
        if (!d) return;
        d.history.push({ version: null, agent: e.reviewer, what: e.status, edit: e.edit, why: e.why });
        d.open_edits = d.open_edits.filter((id) => id !== e.edit);
        return;
      }
    }
  }

  all(): DocumentSummary[] {
    return [...this.documents.values()];
  }
}
