import type { Position } from './diagnostic.js';
import type { Path, WorkflowSource } from './source.js';
import type { Field } from './references.js';
import type { TemplatePart } from './template.js';

/** A text from a workflow (a prompt, the kickoff, an output) that can say where its offsets stand. */
export interface LocatedText {
  file: string;
  /** What the text is, in the words of the file: `kickoff`, `agents.lead.system`. */
  label: string;
  text: string;
  /** Where offset `at` stands in the file, `at` lying in the span [start, end) of the text. */
  locate(start: number, end: number, at: number): Position;
}

/** A text of the workflow with its `$<< … >>` parts, and which field it is. */
export interface LocatedTemplate extends LocatedText {
  field: Field;
  parts: TemplatePart[];
}

export function textInSource(source: WorkflowSource, path: Path, label: string, text: string): LocatedText {
  return {
    file: source.file,
    label,
    text,
    locate: (start, end, at) => source.positionInValue(path, text, start, end, at),
  };
}

/** A whole file's text, such as an agent's system_file. */
export function textInFile(file: string, label: string, text: string): LocatedText {
  return {
    file,
    label,
    text,
    locate: (_start, _end, at) => {
      const before = text.slice(0, at);
      const line = before.split('\n').length;
      return { line, col: at - before.lastIndexOf('\n') };
    },
  };
}
