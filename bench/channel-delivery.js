// Delivering one agent's 10 unread messages must cost the same in a channel of 1,000 messages
// as in one of 100,000 (20 agents): delivery reads the unread part of the inbox, nothing else.
import { loadSource } from './load-source.js';

const { Channel } = await loadSource('src/channel/channel.ts');
const { buildGraph } = await loadSource('src/workflow/graph.ts');

const agents = [{ name: 'lead', role: 'manager' }, ...Array.from({ length: 19 }, (_, i) => ({ name: `w${i + 1}`, role: 'worker' }))];
const team = buildGraph(agents).graph;
const names = agents.map((a) => a.name);

function filled(total) {
  const channel = new Channel(team);
  for (let i = 0; i < total - 10; i++) {
    const sender = names[i % names.length];
    // every 20th message also reaches w1, whose inbox grows with the channel
    const target = i % 20 === 0 ? 'w1' : names[(i + 7) % names.length] === 'w1' ? 'w2' : names[(i + 7) % names.length];
    channel.post(sender === target ? 'lead' : sender, `@${target} message ${i} with some text about the review`);
  }
  channel.deliver('w1');
  channel.acknowledge('w1');
  for (let i = 0; i < 10; i++) channel.post('lead', `@w1 unread ${i}`);
  return channel;
}

function timeDelivery(channel, rounds = 15, perRound = 20_000) {
  const samples = [];
  for (let r = 0; r < rounds; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < perRound; i++) {
      const delivery = channel.deliver('w1');
      if (delivery.messages.length !== 10) throw new Error(`delivered ${delivery.messages.length}`);
      channel.release('w1');
    }
    samples.push(Number(process.hrtime.bigint() - start) / perRound);
  }
  return samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)];
}

export function channelDelivery() {
  const small = filled(1_000);
  const large = filled(100_000);
  timeDelivery(small, 3);
  timeDelivery(large, 3);
  const smallNs = timeDelivery(small);
  const largeNs = timeDelivery(large);
  return { smallNs, largeNs, ratio: largeNs / smallNs };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(channelDelivery());
}
