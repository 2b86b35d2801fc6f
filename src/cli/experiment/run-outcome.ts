import { existsSync } from 'node:fs';
import { gradeSession } from '../../session/graders/graders.js';
import { readSession } from '../../session/reader.js';
import { summarize } from '../../session/summary.js';
import type { CaseRun, RunJson } from '../test/test-case-run.js';
import type { TestCase } from '../test/expectations.js';
import { checkCase, type CheckContext } from '../test/test-expect.js';

/**
 * What one run of an experiment did, read from its session alone (docs/experiments.md), so that
 * `--recompute` finds the same: whether it passed its case's expectations (files as the session
 * says the run wrote them), what it cost, how it ended, and the graders the guardrails read.
 */
export interface RunOutcome {
  pass: boolean;
  /** How the run ended (`run_ended`); `none` when it wrote no session or never ended. */
  status: string;
  cost_usd: number;
  /** Model calls the model declined to answer. */
  refusals: number;
  /** The run broke rather than the team failing its case: it ended in an error, an outage, a limit, or not at all. */
  broke: boolean;
  duplicate_findings: number | null;
  /** The expectations it failed, by name (`outputs.verdict`, `graders.duplicate_findings`). */
  failed: string[];
  /** The first expectation it failed, for the worst cases. */
  first_failure?: string;
}

const BROKEN = new Set(['none', 'error', 'provider_error', 'limit', 'interrupted', 'refused', 'waiting']);

export function outcomeOf(session: string, testCase: TestCase, context: CheckContext): RunOutcome {
  if (!existsSync(session)) return broken('the run wrote no session');
  let record: ReturnType<typeof readSession>;
  try {
    record = readSession(session);
  } catch (e) {
    return broken(`its session cannot be read: ${(e as Error).message}`);
  }
  const summary = summarize(record);
  const end = summary.end;
  if (!end) return { ...broken('the run did not end'), cost_usd: summary.total.cost_usd };
  const result: RunJson = {
    status: end.status,
    reason: end.reason,
    outputs: end.outputs,
    usage: { cost_usd: summary.total.cost_usd },
    proposals: summary.proposals.map((p) => ({ id: p.id, status: p.status, winner: p.winner })),
    session,
  };
  const run: CaseRun = { code: end.exit_code, result, events: record.effective, header: record.header, stderr: '', session, scratch: '', wallMs: 0 };
  const failures = checkCase(testCase, run, context);
  const graders = gradeSession(record, summary);
  return {
    pass: failures.length === 0,
    status: end.status,
    cost_usd: summary.total.cost_usd,
    refusals: graders.refusals?.value ?? 0,
    broke: BROKEN.has(end.status),
    duplicate_findings: graders.duplicate_findings?.value ?? null,
    failed: failures.map((f) => f.expectation),
    ...(failures[0] ? { first_failure: `${failures[0].expectation}: ${failures[0].message}` } : {}),
  };
}

function broken(why: string): RunOutcome {
  return { pass: false, status: 'none', cost_usd: 0, refusals: 0, broke: true, duplicate_findings: null, failed: ['run'], first_failure: `run: ${why}` };
}
