import { describe, expect, it } from 'vitest';
import { CacheDiagnosis } from '../../src/engine/prompt-cache/cache-diagnosis.js';
import { layoutFields, promptLayoutOf } from '../../src/engine/prompt-cache/prompt-layout.js';
import type { ModelResponse } from '../../src/provider/client.js';
import type { WorkflowSpec } from '../../src/workflow/types.js';

const spec = (extra: Partial<WorkflowSpec> = {}) => ({ name: 'x', agents: {}, kickoff: 'k', ...extra }) as WorkflowSpec;
const workflowOf = (extra: Partial<WorkflowSpec> = {}) => ({ spec: spec(extra), batched: false });
const NOTHING = { cacheTtl: undefined, sharedTools: undefined };

describe("the run's prompt layout, fixed at its start and recorded", () => {
  it('a new run: one tool list where the workflow has a context, 5 minutes unless it keeps an hour', () => {
    expect(promptLayoutOf(workflowOf({ context: 'the diff' }), false, NOTHING)).toEqual({ cacheTtl: '5m', sharedTools: true });
    expect(promptLayoutOf(workflowOf(), false, NOTHING)).toEqual({ cacheTtl: '5m', sharedTools: false });
    expect(promptLayoutOf(workflowOf({ cache: { ttl: '1h' } }), false, NOTHING)).toEqual({ cacheTtl: '1h', sharedTools: false });
  });

  it("a resumed or replayed run: the recorded run's, whatever the workflow says now", () => {
    expect(promptLayoutOf(workflowOf({ context: 'the diff' }), false, { cacheTtl: '5m', sharedTools: false })).toEqual({ cacheTtl: '5m', sharedTools: false });
    expect(promptLayoutOf(workflowOf(), false, { cacheTtl: '1h', sharedTools: true })).toEqual({ cacheTtl: '1h', sharedTools: true });
  });

  it('is recorded only where it differs from a run recorded before either existed', () => {
    expect(layoutFields({ cacheTtl: '5m', sharedTools: false })).toEqual({});
    expect(layoutFields({ cacheTtl: '1h', sharedTools: true })).toEqual({ cache_ttl: '1h', shared_tools: true });
  });
});

const answer = (id: string, miss?: { type: string; cache_missed_input_tokens?: number }, written = 25_000) =>
  ({
    id,
    content: [],
    usage: { cache_creation_input_tokens: written },
    ...(miss ? { diagnostics: { cache_miss_reason: miss } } : {}),
  }) as unknown as ModelResponse;

describe('which earlier answer a call is compared with (the cache diagnosis)', () => {
  it("an agent that shares the team's prefix: the first answer of any that does, then its own previous", () => {
    const sharing = new Set(['lead', 'a', 'b']);
    const diagnosis = new CacheDiagnosis((agent) => sharing.has(agent));
    expect(diagnosis.of('lead')).toEqual({ previous_message_id: null });
    diagnosis.answered('solo', answer('msg_0'));
    expect(diagnosis.of('lead'), 'an answer outside the shared prefix is no writer of it').toEqual({ previous_message_id: null });
    diagnosis.answered('lead', answer('msg_1'));
    diagnosis.answered('a', answer('msg_2'));
    expect(diagnosis.of('a')).toEqual({ previous_message_id: 'msg_2' });
    expect(diagnosis.of('b')).toEqual({ previous_message_id: 'msg_1' });
    expect(diagnosis.of('solo')).toEqual({ previous_message_id: 'msg_0' });
    expect(diagnosis.of('other'), 'an agent outside it, on its first call: none').toEqual({ previous_message_id: null });
  });

  it('an answer with no id names nothing; a miss the answer reports is kept', () => {
    const diagnosis = new CacheDiagnosis(() => true);
    diagnosis.answered('a', answer(''));
    expect(diagnosis.of('b')).toEqual({ previous_message_id: null });
    diagnosis.answered('b', answer('msg_3', { type: 'tools_changed', cache_missed_input_tokens: 20_000 }));
    expect(diagnosis.misses).toEqual([{ agent: 'b', reason: 'tools_changed', missed_tokens: 20_000 }]);
    expect(diagnosis.of('c')).toEqual({ previous_message_id: 'msg_3' });
  });

  it("a miss is read with the call's usage: what it wrote, up to the diagnosis's estimate; a call that read the prefix missed nothing (issue 84)", () => {
    const diagnosis = new CacheDiagnosis(() => true);
    const tools = { type: 'tools_changed', cache_missed_input_tokens: 21_900 };
    diagnosis.answered('rev-1', answer('m1', tools, 21_900));
    diagnosis.answered('rev-2', answer('m2', tools, 214));
    diagnosis.answered('rev-3', answer('m3', tools, 5_000));
    diagnosis.answered('rev-4', answer('m4', tools, 1_023));
    diagnosis.answered('rev-5', answer('m5', { type: 'system_changed', cache_missed_input_tokens: 2_000 }, 30_000));
    expect(diagnosis.misses).toEqual([
      { agent: 'rev-1', reason: 'tools_changed', missed_tokens: 21_900 },
      { agent: 'rev-3', reason: 'tools_changed', missed_tokens: 5_000 },
      { agent: 'rev-5', reason: 'system_changed', missed_tokens: 2_000 },
    ]);
  });
});
