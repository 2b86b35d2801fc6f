import type { ModelRequest } from '../../provider/client.js';
import { durationMs } from '../../workflow/limits.js';
import { BatchCalls } from './batch-calls.js';
import type { CacheWarming } from '../prompt-cache/cache-warming.js';
import type { RunOptions } from '../run-options.js';

/** The run's batched calls, when it can make any (a live run on Anthropic's API). */
export function batchesOf(
  options: Pick<RunOptions, 'answers' | 'recording' | 'progress' | 'workflow'>,
  onChange: () => void,
  warming?: CacheWarming,
): { batches?: BatchCalls } {
  const api = options.answers.batches;
  const { journal } = options.recording;
  if (!api) return {};
  const inDoubt = journal.recorded.batchesInDoubt;
  if (inDoubt > 0)
    options.progress({
      type: 'warning',
      message:
        `the process before this one was stopped while it created a message batch for ${inDoubt} call${inDoubt === 1 ? '' : 's'}: ` +
        "it is looked for among the API's newest batches (an ended one holding exactly those calls is taken); calls whose batch is not found " +
        'are sent again and may be billed twice (the Console lists the batches)',
    });
  return {
    batches: new BatchCalls({
      api,
      note: (event) => journal.append(event),
      submitted: (customId) => journal.recorded.submittedBatch(customId),
      inDoubt: (customId) => journal.recorded.inDoubt(customId),
      unanswered: journal.recorded.unansweredBatched(),
      progress: (event) => options.progress(event),
      onChange,
      ...(warming ? { coldPrefix: (request: ModelRequest) => warming.coldPrefix(request, 'anthropic') } : {}),
      ...(options.workflow.spec.limits?.wait_timeout !== undefined ? { waitTimeoutMs: durationMs(options.workflow.spec.limits.wait_timeout) } : {}),
    }),
  };
}
