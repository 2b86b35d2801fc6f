import { estimateOf } from '../estimate/estimate-command.js';
import { UsageError } from '../usage-error.js';
import type { LoadedCase } from './experiment-cases.js';
import type { PlannedRun } from './experiment-verdict.js';

/** What an experiment will run and spend (docs/experiments.md): its runs, stage by stage, and their estimate. */

/** Stage `stage`'s runs: every case, both versions, K repeats, base and head side by side so that they share each batch. */
export function plan(cases: number, repeat: number, stage: 1 | 2): PlannedRun[] {
  const runs: PlannedRun[] = [];
  for (let r = 1; r <= repeat; r++)
    for (let c = 0; c < cases; c++)
      for (const version of (c + r) % 2 === 0 ? (['base', 'head'] as const) : (['head', 'base'] as const))
        runs.push({ case: c, version, stage, repeat: r, session: `runs/s${stage}-c${String(c + 1).padStart(3, '0')}-${version}-r${r}.jsonl` });
  return runs;
}

/** The likely cost of one stage: each case's estimate (conclave estimate, setup not run) in both versions, K times. */
export async function estimateStage(cases: readonly LoadedCase[], repeat: number, batch: boolean): Promise<number> {
  let sum = 0;
  for (const c of cases) {
    for (const version of ['base', 'head'] as const) {
      const workflow = c.workflow[version];
      const pairs = Object.entries(c.testCase.inputs).map(([k, v]) => `${k}=${v}`);
      const estimate = await estimateOf(workflow, pairs, { setup: false, batch, workspace: c.workspace[version] }, []);
      sum += estimate.likely_usd * repeat;
    }
  }
  return sum;
}

/** `--primary GRADER`: every case must bound that grader, since its bounds make a run's pass. */
export function checkPrimary(cases: readonly LoadedCase[], primary: string): void {
  const without = cases.filter((c) => !c.testCase.expect.some((e) => e.kind === 'grader' && e.id === primary));
  if (without.length > 0)
    throw new UsageError(
      `--primary ${primary}: a run passes on it by the case's bounds on that grader (expect: graders: { ${primary}: … }), and ` +
        `${without.length === cases.length ? 'no case' : without.map((c) => `"${c.entry.name}"`).join(', ')} bounds it`,
    );
}
