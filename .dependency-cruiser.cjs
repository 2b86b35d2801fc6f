// The layering of docs/ARCHITECTURE.md, checked by `npm run lint` (dependency-cruiser, pinned):
// no import circle, and no import up the layers. From the top: cli → workers → engine → agents →
// channel → workflow → session → provider; trace/ and report/ between cli and session; the five root modules
// (exit-codes.ts, conclave-error.ts, abort-reasons.ts, detached.ts, thousands.ts) below every layer.
const LAYERS = ['cli', 'workers', 'engine', 'agents', 'channel', 'workflow', 'session', 'provider'];
const above = (layer) => {
  const i = LAYERS.indexOf(layer);
  return [...LAYERS.slice(0, i), ...(layer === 'cli' ? [] : ['trace', 'report'])];
};
// The rooms inside the three widest layers (docs/ARCHITECTURE.md: rooms), and the rooms of the same
// layer each may import ('' is the layer's own top folder: its commands, the scheduler, the
// client). A new arrow between rooms is a decision: add it here, and keep the rooms without a circle.
const ROOMS = {
  cli: {
    action: ['', 'experiment', 'github', 'views', 'votes'],
    estimate: [''],
    experiment: ['', 'estimate', 'github', 'test'],
    github: ['', 'estimate', 'output'],
    output: [''],
    test: ['', 'github'],
    traces: [''],
    views: ['', 'github', 'output'],
    votes: ['', 'github'],
    workers: ['', 'github'],
  },
  engine: {
    batches: ['', 'prompt-cache', 'replay'],
    calls: ['', 'batches', 'ceilings', 'prompt-cache', 'replay', 'teams'],
    ceilings: ['', 'replay'],
    estimate: ['', 'ceilings', 'prompt-cache', 'replay', 'teams'],
    'prompt-cache': ['replay'],
    replay: [''],
    teams: ['', 'ceilings', 'prompt-cache', 'trust'],
    trust: ['', 'replay'],
  },
  provider: {
    rates: [''],
    stores: ['', 'rates'],
  },
};
const roomRules = Object.entries(ROOMS).flatMap(([layer, rooms]) =>
  Object.entries(rooms).flatMap(([room, allowed]) => {
    const others = Object.keys(rooms).filter((r) => r !== room && !allowed.includes(r));
    const targets = [...others.map((r) => `${r}/`), ...(allowed.includes('') ? [] : ['[^/]+\\.ts$'])];
    if (targets.length === 0) return [];
    return {
      name: `room-${layer}-${room}`,
      severity: 'error',
      comment: `${layer}/${room}/ imports only ${allowed.map((r) => (r === '' ? `${layer}/` : `${layer}/${r}/`)).join(', ')} of its layer (ROOMS above)`,
      from: { path: `^src/${layer}/${room}/` },
      to: { path: `^src/${layer}/(${targets.join('|')})` },
    };
  }),
);
module.exports = {
  forbidden: [
    ...roomRules,
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'an import circle, type-only ones included: move what both sides need down to where both can import it',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...LAYERS.map((layer) => ({
      name: `no-upward-from-${layer}`,
      severity: 'error',
      comment: `${layer}/ imports only from the layers below it (docs/ARCHITECTURE.md)`,
      from: { path: `^src/${layer}/` },
      to: { path: `^src/(${above(layer).join('|')})/` },
    })),
    {
      name: 'trace-reads-only-session',
      severity: 'error',
      comment: 'trace/ makes spans from a session: it is used by cli alone',
      from: { path: '^src/(?!cli/|trace/)' },
      to: { path: '^src/trace/' },
    },
    {
      name: 'report-reads-only-session',
      severity: 'error',
      comment: 'report/ makes a page from a session alone (and formats money as provider/ does): it is used by cli alone',
      from: { path: '^src/report/' },
      to: { path: '^src/(cli|workers|engine|agents|channel|workflow|trace)/' },
    },
    {
      name: 'root-modules-import-nothing-of-ours',
      severity: 'error',
      from: { path: '^src/(exit-codes|conclave-error|abort-reasons|detached|thousands)\\.ts$' },
      to: { path: '^src/[a-z-]+/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '\\.test\\.ts$' },
  },
};
