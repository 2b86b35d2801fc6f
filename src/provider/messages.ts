import type { Message, MessageCreateParamsNonStreaming } from '@anthropic-ai/sdk/resources/messages';

/** A Messages API request as conclave makes it (never streamed by the caller: the provider decides). */
export type ModelRequest = Omit<MessageCreateParamsNonStreaming, 'stream'>;
/** A Messages API answer. */
export type ModelResponse = Message;
