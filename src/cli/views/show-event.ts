import { printableJson } from '../command-guard.js';
import { printable } from '../output/terminal-text.js';
import { readSession, SessionFileError } from '../../session/reader.js';
import type { EventOf } from '../../session/format.js';
import { recordedRequest, type RecordedRequest } from '../../session/recorded-request.js';
import { EXIT } from '../../exit-codes.js';
import { UsageError } from '../usage-error.js';
import { asUsageError } from '../usage-error.js';

/**
 * `conclave show SESSION --event N`: one recorded event in full. A model call is shown with its
 * whole request (the session keeps what changed since the agent's previous call: it is made whole
 * again) and its response; `--format json` prints the event with `request` made whole.
 */
export function showEventCommand(file: string, eventText: string, format: string): number {
  const seq = Number(eventText);
  if (!Number.isInteger(seq) || seq < 1) throw new UsageError(`--event takes an event's number (a whole number from 1); found "${eventText}"`);
  if (format !== 'text' && format !== 'json') throw new UsageError(`--event prints as text or json, not ${format}`);
  const session = asUsageError(() => readSession(file), SessionFileError);
  const event = session.effective.find((e) => e.seq === seq);
  if (!event) {
    const last = session.effective[session.effective.length - 1]?.seq ?? 0;
    throw new UsageError(`${file} has no event #${seq} (its events are numbered 1 to ${last})`);
  }
  const request = event.type === 'model_call' ? recordedRequest(session.effective, seq) : undefined;
  if (format === 'json') {
    process.stdout.write(`${printableJson(request ? { ...event, request: wholeJson(request) } : event)}\n`);
    return EXIT.ok;
  }
  process.stdout.write(
    printable(event.type === 'model_call' && request ? modelCallText(event, request) : `#${event.seq} ${event.type}\n${JSON.stringify(event, null, 2)}\n`),
  );
  return EXIT.ok;
}

function wholeJson(request: RecordedRequest): Record<string, unknown> {
  return { model: request.model, ...request.settings, system: request.system, tools: request.tools, messages: request.messages };
}

function modelCallText(event: EventOf<'model_call'>, request: RecordedRequest): string {
  const usage = event.response.usage;
  const lines = [
    `#${event.seq} model call · @${event.agent} · turn ${event.turn} · call ${event.step} · ${String(request.model)}` +
      ` · ${usage?.input_tokens ?? 0} in, ${usage?.output_tokens ?? 0} out · $${event.cost_usd.toFixed(4)}${event.cached ? ' (from the cache)' : ''}`,
    '',
    `settings: ${JSON.stringify(request.settings)}`,
    `tools: ${request.tools.map((t) => (typeof t === 'string' ? t : JSON.stringify(t))).join(', ') || 'none'}`,
    '',
    'system:',
    indented(request.system),
  ];
  for (const [i, message] of request.messages.entries()) {
    const { role, content } = message as { role?: string; content?: unknown };
    lines.push('', `message ${i + 1} (${role ?? '?'}):`, ...blocksText(content));
  }
  lines.push('', `response (${event.response.stop_reason ?? 'no stop reason'}):`, ...blocksText(event.response.content));
  return `${lines.join('\n')}\n`;
}

function blocksText(content: unknown): string[] {
  if (typeof content === 'string') return [indented(content)];
  if (!Array.isArray(content)) return [indented(JSON.stringify(content))];
  return content.map((block: Record<string, unknown>) => {
    switch (block.type) {
      case 'text':
        return indented(String(block.text));
      case 'thinking':
        return indented(`[thinking] ${String(block.thinking ?? '')}`);
      case 'tool_use':
        return indented(`[tool_use ${String(block.name)} ${String(block.id)}] ${JSON.stringify(block.input)}`);
      case 'tool_result':
        return indented(`[tool_result ${String(block.tool_use_id)}${block.is_error ? ' error' : ''}] ${resultText(block.content)}`);
      default:
        return indented(`[${String(block.type)}] ${JSON.stringify(block)}`);
    }
  });
}

function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((b: { text?: string }) => b.text ?? JSON.stringify(b)).join('\n');
  return JSON.stringify(content);
}

function indented(text: string): string {
  return text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
}
