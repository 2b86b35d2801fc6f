// A lead and 8 reviewers whose calls go through the Message Batches API (`batch: true`), against
// the same run with ordinary calls, both against the fake Messages API (its batches end 200 ms
// after they are submitted): what the batch price saves, measured in one run.
import { fileURLToPath } from 'node:url';
import { loadSource } from './load-source.js';
import { runCliJson } from './run-json.js';

const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const { REVIEW, reviewScript } = await loadSource('test/fixtures/review-team.ts');

async function review(batch) {
  const server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 200 } });
  try {
    const { wallMs, result } = await runCliJson(REVIEW(batch), server);
    return {
      costUsd: result.usage.cost_usd,
      wallMs,
      batches: server.batches.map((b) => b.requests.length),
      ordinary: server.requests.filter((r) => r.batch === undefined).length,
    };
  } finally {
    await server.close();
  }
}

export async function batchedReview() {
  const plain = await review(false);
  const batched = await review(true);
  return { plain, batched, ratio: batched.costUsd / plain.costUsd };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await batchedReview());
