import type { Finding } from '../findings.js';
import { agentOrder, leadOf, share, type Grader } from './grader.js';
import { FindingIndex } from './finding-index.js';

const place = (f: Finding) => ({ agent: f.agent, path: f.path, line: f.line, end_line: f.end_line });

/** The share of findings that overlap one another agent recorded earlier: the same file, lines in common. */
export const duplicateFindings: Grader = {
  id: 'duplicate_findings',
  means: 'the share of findings (annotate) that overlap a finding another agent recorded earlier: same file, lines in common',
  total: 'mean',
  grade({ summary }) {
    const { findings } = summary;
    const index = new FindingIndex();
    const duplicates = findings.flatMap((f) => {
      const earlier = index.overlapping(f, (e) => e.agent !== f.agent);
      index.add(f);
      return earlier ? [{ ...place(f), earlier: place(earlier) }] : [];
    });
    const behind = duplicates.map((d) => `@${d.agent}'s ${d.path}:${d.line} overlaps @${d.earlier.agent}'s`).join('; ');
    return { value: share(duplicates.length, findings.length), findings: findings.length, duplicates, ...(behind ? { behind } : {}) };
  },
};

/**
 * The unique findings each reviewer (every agent but the lead) added, in the order the agents came
 * into the run: a finding is unique when it overlaps no finding of an agent before it. The value
 * is what the last reviewer added: 0 says the team had saturated before it (a smaller `for_each`
 * would have found as much).
 */
export const marginalFindings: Grader = {
  id: 'marginal_findings',
  means: "the unique findings the last reviewer added, the reviewers in the order they came into the run (curve: each one's)",
  total: 'sum',
  grade({ events, summary }) {
    const lead = leadOf(events);
    const reviewers = agentOrder(events).filter((a) => a !== lead);
    const before = new FindingIndex();
    let total = 0;
    const mine = new Map<string, Finding[]>();
    for (const f of summary.findings) (mine.get(f.agent) ?? mine.set(f.agent, []).get(f.agent)!).push(f);
    const curve = reviewers.map((agent) => {
      const own = mine.get(agent) ?? [];
      const unique = own.filter((f) => before.overlapping(f) === undefined);
      for (const f of own) before.add(f);
      total += unique.length;
      return { agent, findings: own.length, unique: unique.length, total_unique: total };
    });
    // A run that recorded no finding says nothing of saturation.
    const behind = curve.map((c) => `@${c.agent} +${c.unique}`).join(', ');
    return { value: curve.length && summary.findings.length ? curve[curve.length - 1]!.unique : null, curve, ...(behind ? { behind } : {}) };
  },
};

/** What the run cost for each finding it recorded. */
export const costPerFinding: Grader = {
  id: 'cost_per_finding',
  means: "the run's cost in dollars divided by its findings (annotate)",
  total: 'mean',
  grade({ summary }) {
    const findings = summary.findings.length;
    const value = findings === 0 ? null : Math.round((summary.total.cost_usd / findings) * 1e6) / 1e6;
    return { value, findings, cost_usd: Math.round(summary.total.cost_usd * 1e6) / 1e6 };
  },
};
