import { LineCounter, isAlias, isMap, isPair, isScalar, isSeq, parseDocument, visit, type Document, type Node, type Pair } from 'yaml';
import type { Diagnostic, Position } from './diagnostic.js';

export type Path = readonly (string | number)[];

const TOO_DEEP = 'the file nests too deeply to read (lists or mappings inside each other thousands of levels deep)';

/** The most levels of block nesting a file may have before it is parsed (a workflow needs a few; validate refuses more than 64). */
export const MAX_PARSED_DEPTH = 1000;

/**
 * Where a text's block nesting first passes `limit`, counted without parsing: each line's depth is
 * the number of indentations open above it plus the "- " and "? " markers it starts with (compact
 * lists). Blank and comment lines do not count. An estimate that never undercounts the shapes
 * that nest deeply (a level per line, or many on one line); undefined when the text stays within.
 */
export function tooDeepAt(text: string, limit = MAX_PARSED_DEPTH): number | undefined {
  const open: number[] = [];
  let offset = 0;
  for (const line of text.split('\n')) {
    const [, spaces = '', markers = '', rest = ''] = /^( *)((?:[-?](?: +|$))*)(.*)$/.exec(line) ?? [];
    if (markers !== '' || (rest !== '' && !rest.startsWith('#'))) {
      while (open.length > 0 && open[open.length - 1]! >= spaces.length) open.pop();
      open.push(spaces.length);
      if (open.length + (markers.match(/[-?]/g)?.length ?? 0) > limit) return offset + spaces.length;
    }
    offset += line.length + 1;
  }
  return undefined;
}

/** A parsed workflow file that can say where any of its values stands in the text. */
export class WorkflowSource {
  readonly doc: Document.Parsed;
  private readonly lines = new LineCounter();

  /** Why the text was not parsed: it nests deeper than the parser can follow. */
  private readonly tooDeep: Diagnostic | undefined;

  constructor(
    readonly file: string,
    readonly text: string,
  ) {
    // The parser recurses once per level: a file nested thousands deep is refused before it
    // starts, and a stack that runs out anyway is a diagnostic, never an internal error.
    const deepAt = tooDeepAt(text);
    let doc: Document.Parsed | undefined;
    if (deepAt === undefined) {
      try {
        doc = parseDocument(text, { lineCounter: this.lines, prettyErrors: false });
      } catch (e) {
        if (!(e instanceof RangeError)) throw e;
      }
    }
    this.doc = doc ?? parseDocument('', { lineCounter: this.lines });
    if (!doc) {
      for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) this.lines.addNewLine(at + 1);
      this.tooDeep = this.error(this.positionAt(deepAt ?? 0), TOO_DEEP);
    }
  }

  positionAt(offset: number): Position {
    const { line, col } = this.lines.linePos(offset);
    return { line, col };
  }

  error(position: Position, message: string): Diagnostic {
    return { file: this.file, ...position, severity: 'error', message };
  }

  warning(position: Position, message: string): Diagnostic {
    return { file: this.file, ...position, severity: 'warning', message };
  }

  /** YAML syntax errors, and aliases that name no anchor. */
  syntaxErrors(): Diagnostic[] {
    if (this.tooDeep) return [this.tooDeep];
    // A tab in indentation sets off a cascade of errors that are all the tab: report the tab alone.
    const tabs = this.doc.errors.filter((e) => e.code === 'TAB_AS_INDENT');
    const errors = tabs.length > 0 ? tabs : this.doc.errors;
    const found = errors.map((e) => this.error(this.positionAt(e.pos[0]), this.syntaxMessage(e)));
    if (found.length > 0) return found;
    visit(this.doc, {
      Alias: (_, alias) => {
        const target = alias.resolve(this.doc);
        if (target === undefined) {
          found.push(this.error(this.startOf(alias), `the alias *${alias.source} names no anchor`));
        } else if (target.range && alias.range && target.range[0] <= alias.range[0] && alias.range[1] <= target.range[2]) {
          found.push(
            this.error(this.startOf(alias), `the alias *${alias.source} is inside the node &${alias.source} it repeats: it would repeat itself forever`),
          );
        }
      },
    });
    return found;
  }

  /** A YAML syntax error in plain words, with the likely fix where there is one. */
  private syntaxMessage(e: Document.Parsed['errors'][number]): string {
    if (e.code === 'TAB_AS_INDENT') return 'a tab indents this line: YAML indents with spaces only; replace the tab with spaces';
    if (e.code === 'DUPLICATE_KEY') return this.duplicateKeyMessage(e.pos[0]);
    if (e.code === 'MULTIPLE_DOCS') return 'a workflow file holds one YAML document; this "---" starts a second';
    if (/Nested mappings are not allowed in compact mappings/.test(e.message)) {
      return 'this value holds ": ", which YAML reads as the start of a mapping; put the whole value in quotes ("…")';
    }
    if (/call stack/i.test(e.message)) return TOO_DEEP;
    return e.message;
  }

  /** The node holding the value at `path`, or undefined when there is none. */
  valueNode(path: Path): Node | undefined {
    let node: unknown = this.doc.contents;
    for (const segment of path) {
      node = this.resolve(node);
      if (isMap(node)) node = this.pair(node, segment)?.value;
      else if (isSeq(node) && typeof segment === 'number') node = node.items[segment];
      else return undefined;
    }
    return (this.resolve(node) as Node | null) ?? undefined;
  }

  /** The key node of the last segment of `path` (the value node for list items). */
  keyNode(path: Path): Node | undefined {
    if (path.length === 0) return undefined;
    const parent = this.resolve(this.valueNode(path.slice(0, -1)));
    const last = path[path.length - 1]!;
    if (isMap(parent)) return (this.pair(parent, last)?.key as Node | null) ?? undefined;
    if (isSeq(parent) && typeof last === 'number') return (parent.items[last] as Node) ?? undefined;
    return undefined;
  }

  /** Where the value at `path` starts; the closest existing ancestor when it is missing. */
  valuePosition(path: Path): Position {
    for (let n = path.length; n >= 0; n--) {
      const node = this.valueNode(path.slice(0, n));
      if (node?.range) return this.positionAt(node.range[0]);
    }
    return { line: 1, col: 1 };
  }

  /** Where the key of `path` stands (a list item: where the item starts). */
  keyPosition(path: Path): Position {
    const key = this.keyNode(path);
    return key?.range ? this.positionAt(key.range[0]) : this.valuePosition(path);
  }

  /**
   * Where offset `at` of a string value stands in the file. The value is the parsed text, which
   * may differ from the source (block indentation, quotes, escapes), so the span [start, end)
   * holding `at` is looked up in the node's source: its n-th occurrence there is the n-th in the
   * value. Falls back to the span's start, then to the node's start.
   */
  positionInValue(path: Path, value: string, start: number, end: number, at: number): Position {
    const node = this.valueNode(path);
    if (!node?.range) return this.valuePosition(path);
    const raw = this.text.slice(node.range[0], node.range[1]);
    const firstLine = value.slice(start, end).split('\n')[0]!;
    let nth = 0;
    for (let i = value.indexOf(firstLine); i !== -1 && i < start; i = value.indexOf(firstLine, i + 1)) nth++;
    let found = -1;
    for (let k = 0; k <= nth; k++) {
      found = raw.indexOf(firstLine, found + 1);
      if (found === -1) return this.positionAt(node.range[0]);
    }
    const within = at - start <= firstLine.length ? at - start : 0;
    return this.positionAt(node.range[0] + found + within);
  }

  private startOf(node: Node): Position {
    return node.range ? this.positionAt(node.range[0]) : { line: 1, col: 1 };
  }

  private resolve(node: unknown): unknown {
    return isAlias(node) ? node.resolve(this.doc) : node;
  }

  private pair(map: { items: Pair[] }, key: string | number): Pair | undefined {
    return map.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(key));
  }

  private duplicateKeyMessage(offset: number): string {
    let message = 'this key appears twice in the same mapping';
    visit(this.doc, {
      Map: (_, map) => {
        const dup = map.items.find((p) => isScalar(p.key) && p.key.range?.[0] === offset);
        if (!dup || !isScalar(dup.key)) return;
        const name = String(dup.key.value);
        const first = map.items.find((p) => isScalar(p.key) && String(p.key.value) === name);
        const firstKey = first?.key as Node | undefined;
        const line = firstKey?.range ? this.positionAt(firstKey.range[0]).line : undefined;
        message = `duplicate key "${name}"${line ? ` (first defined on line ${line})` : ''}`;
        return visit.BREAK;
      },
    });
    return message;
  }
}
