import type { Finding } from '../findings.js';

/** A finding over more lines than this is kept apart and compared one by one; the rest are found by line. */
const INDEXED_SPAN = 256;

/**
 * The findings recorded so far, to ask which one overlaps a new finding (the same file, a line in
 * common) without comparing it with every one: a session of thousands of findings is graded in
 * linear time, not quadratic. Of several that overlap, the first recorded is given.
 */
export class FindingIndex {
  private readonly byLine = new Map<string, { finding: Finding; order: number }[]>();
  private readonly wide: { finding: Finding; order: number }[] = [];
  private count = 0;

  add(finding: Finding): void {
    const entry = { finding, order: this.count++ };
    if (finding.end_line - finding.line > INDEXED_SPAN) return void this.wide.push(entry);
    for (let line = finding.line; line <= finding.end_line; line++) {
      const key = `${finding.path}\u0000${line}`;
      const at = this.byLine.get(key);
      if (at) at.push(entry);
      else this.byLine.set(key, [entry]);
    }
  }

  /** The first finding recorded that overlaps `finding` and that `which` accepts. */
  overlapping(finding: Finding, which: (earlier: Finding) => boolean = () => true): Finding | undefined {
    let best: { finding: Finding; order: number } | undefined;
    const consider = (e: { finding: Finding; order: number }) => {
      if ((!best || e.order < best.order) && which(e.finding)) best = e;
    };
    for (const e of this.wide) if (e.finding.path === finding.path && e.finding.line <= finding.end_line && finding.line <= e.finding.end_line) consider(e);
    // A wide new finding is looked up line by line only up to the span: past it, the indexed ones are compared whole.
    if (finding.end_line - finding.line > INDEXED_SPAN) {
      for (const list of this.byLine.values())
        for (const e of list) if (e.finding.path === finding.path && e.finding.line <= finding.end_line && finding.line <= e.finding.end_line) consider(e);
    } else for (let line = finding.line; line <= finding.end_line; line++) for (const e of this.byLine.get(`${finding.path}\u0000${line}`) ?? []) consider(e);
    return best?.finding;
  }
}
