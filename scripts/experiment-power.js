// The power of conclave experiment's design (docs/experiments.md: measured by simulation): the
// statistics alone, seeded, on experiments of N inputs with base pass rates between 40 and 90 %,
// K runs per version per stage, the head worse by the same drop on every input.
//
//   node scripts/experiment-power.js [EXPERIMENTS]      (500 a row by default, about 4 minutes)
import { loadSource } from '../bench/load-source.js';

const { decideStage, DEFAULT_DESIGN, seeded } = await loadSource('src/cli/experiment/statistics.ts');
const experiments = Number(process.argv[2] ?? 500);

function row(inputs, k, drop) {
  const random = seeded(`p-${inputs}-${k}-${drop}`);
  const counted = { REJECT: 0, PROMOTE: 0, INCONCLUSIVE: 0, stage2: 0 };
  for (let e = 0; e < experiments; e++) {
    const rates = Array.from({ length: inputs }, () => 0.4 + 0.5 * random());
    const strata = rates.map(() => ({ base: { passes: 0, runs: 0 }, head: { passes: 0, runs: 0 } }));
    let decision;
    for (const stage of [1, 2]) {
      rates.forEach((p, i) => {
        for (let j = 0; j < k; j++) {
          strata[i].base.runs++;
          if (random() < p) strata[i].base.passes++;
          strata[i].head.runs++;
          if (random() < Math.max(0, p - drop)) strata[i].head.passes++;
        }
      });
      decision = decideStage(strata, stage, DEFAULT_DESIGN, `p-${inputs}-${k}-${drop}-${e}`);
      if (decision.verdict) break;
      counted.stage2++;
    }
    counted[decision.verdict]++;
  }
  const pct = (n) => `${((n * 100) / experiments).toFixed(1)} %`;
  return `| ${inputs} × ${k} | ${drop === 0 ? 'none' : `−${Math.round(drop * 100)} points`} | ${pct(counted.REJECT)} | ${pct(counted.PROMOTE)} | ${pct(counted.INCONCLUSIVE)} | ${pct(counted.stage2)} |`;
}

console.log('| inputs × K | true change | REJECT | PROMOTE | INCONCLUSIVE | went to stage 2 |\n|---|---|---|---|---|---|');
for (const [inputs, k] of [
  [20, 5],
  [10, 5],
  [20, 3],
  [40, 5],
])
  for (const drop of [0, 0.1, 0.2, 0.3, 0.4]) console.log(row(inputs, k, drop));
