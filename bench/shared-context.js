// A lead and 16 for_each reviewers of one change of ~20,000 tokens, against the fake Messages API
// simulating the prompt cache (an entry readable once the answer that wrote it starts streaming),
// answering every call after LATENCY_MS: the change as the team's `context:`, against the same
// review with the change in each reviewer's own `system:`. Alternated, ROUNDS times each.
import { fileURLToPath } from 'node:url';
import { loadSource } from './load-source.js';
import { runCliJson } from './run-json.js';

const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const { diffOf, OWN, reviewScript, SHARED } = await loadSource('test/fixtures/review-team.ts');
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export const LATENCY_MS = 500;
export const CONTEXT_TOKENS = 20_000;
const ROUNDS = 3;

/** One review: its wall time, and what --json says it cost and what the prompt cache did. */
async function review(workflow, batches) {
  const server = await startFakeAnthropic(reviewScript(), { latencyMs: LATENCY_MS, promptCache: { minTokens: 1024 }, ...(batches ? { batches } : {}) });
  try {
    const { wallMs, result } = await runCliJson(workflow, server, { 'change.diff': diffOf(CONTEXT_TOKENS) });
    return { wallMs, costUsd: result.usage.cost_usd, cache: result.prompt_cache };
  } finally {
    await server.close();
  }
}

export async function sharedContext() {
  const own = [];
  const shared = [];
  for (let i = 0; i < ROUNDS; i++) {
    own.push(await review(OWN));
    shared.push(await review(SHARED));
  }
  const ownWall = median(own.map((r) => r.wallMs));
  const sharedWall = median(shared.map((r) => r.wallMs));
  return {
    ownCost: own[0].costUsd,
    sharedCost: shared[0].costUsd,
    costRatio: shared[0].costUsd / own[0].costUsd,
    ownWall,
    sharedWall,
    wallRatio: sharedWall / ownWall,
    /**
     * The wall time the review may take: the other's, and one answer's start more (the first
     * reviewer's, which the others wait for), with a tenth of it for the timers' noise.
     */
    allowedWallRatio: (ownWall + 1.1 * LATENCY_MS) / ownWall,
    ownCache: own[0].cache,
    sharedCache: shared[0].cache,
  };
}

/**
 * The same review as `context:` with every agent's calls batched (`batch: true`), against the
 * fake API serving cache reads in batches (what was written before a batch was created), its
 * batches ending 200 ms after they are submitted: against `context:` alone, and the diff in each
 * system prompt, all three measured in this one run.
 */
export async function contextInBatches() {
  const own = await review(OWN);
  const shared = await review(SHARED);
  const batched = await review(SHARED.replace('name: review\n', 'name: review\ndefaults: { batch: true }\n'), { endsAfterMs: 200 });
  return {
    ownCost: own.costUsd,
    sharedCost: shared.costUsd,
    batchedCost: batched.costUsd,
    ratio: batched.costUsd / shared.costUsd,
    ofOwn: batched.costUsd / own.costUsd,
    batchedCache: batched.cache,
    ownWall: own.wallMs,
    sharedWall: shared.wallMs,
    batchedWall: batched.wallMs,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await sharedContext(), await contextInBatches());
