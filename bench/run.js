// `npm run bench`: every benchmark, each checked against its target. Exits 1 when one is missed.
import { channelDelivery } from './channel-delivery.js';
import { coldStart } from './cold-start.js';

const results = [];

for (const row of coldStart()) {
  if (row.name === 'node -e 0') {
    results.push({ benchmark: 'baseline: node -e 0', measured: `${row.medianMs} ms`, ratio: 1, target: '', ok: true });
    continue;
  }
  results.push({ benchmark: `cold start: ${row.name}`, measured: `${row.medianMs} ms`, ratio: row.ratio, target: '≤ 2.00 × node -e 0', ok: row.ratio <= 2 });
}

const delivery = channelDelivery();
results.push({
  benchmark: 'channel: deliver 10 unread, 100,000 vs 1,000 messages',
  measured: `${delivery.largeNs.toFixed(0)} ns vs ${delivery.smallNs.toFixed(0)} ns`,
  ratio: Number(delivery.ratio.toFixed(2)),
  target: '≤ 2.00',
  ok: delivery.ratio <= 2,
});

console.table(results);
const missed = results.filter((r) => !r.ok);
if (missed.length > 0) {
  console.error(`missed: ${missed.map((r) => r.benchmark).join('; ')}`);
  process.exitCode = 1;
}
