import type { ReportModel } from './report-model.js';
import { attr, html, idOf } from './escape.js';
import { RUN_LANE } from '../session/timeline.js';

const LABEL = 150;
const WIDTH = 960;
const LANE = 18;

/**
 * The run's timeline as inline SVG (no script, no font, nothing fetched): a lane per agent, a bar
 * per turn (red when it failed) and per wait for a rate limit, a tick per model call (hollow when
 * a message batch answered it), and a lane for what the run as a whole waited for (people's votes,
 * the time it was parked). Each mark has a title a pointer shows; each agent's lane links to it.
 */
export function timelineSvg(model: ReportModel): string {
  const lanes = model.summary.timeline;
  const calls = Object.entries(model.calls).flatMap(([agent, list]) => list.flatMap((c) => (c.atMs === undefined ? [] : [{ agent, call: c }])));
  const times = [...lanes.flatMap((l) => l.bars.flatMap((b) => [b.startMs, b.endMs])), ...calls.map((c) => c.call.atMs!)];
  if (lanes.length === 0 || times.length === 0)
    return '<p class="none">No timeline: the session holds no times (it was written before conclave recorded them).</p>';
  const t0 = Math.min(...times);
  const span = Math.max(1, Math.max(...times) - t0);
  const x = (ms: number) => LABEL + ((ms - t0) / span) * (WIDTH - LABEL - 10);
  const row = new Map(lanes.map((l, i) => [l.agent, i]));
  const out: string[] = [];
  lanes.forEach((lane, i) => {
    const y = i * LANE;
    const label =
      lane.agent === RUN_LANE
        ? `<text x="4" y="${y + 13}" class="lane">the run waiting</text>`
        : `<a href="#${attr(idOf(lane.agent))}"><text x="4" y="${y + 13}" class="lane">@${html(lane.agent.slice(0, 22))}</text></a>`;
    out.push(label, `<line x1="${LABEL}" x2="${WIDTH - 10}" y1="${y + LANE - 1}" y2="${y + LANE - 1}" class="rule"/>`);
    for (const bar of lane.bars) {
      const width = Math.max(1.5, x(bar.endMs) - x(bar.startMs));
      const title = `${lane.agent === RUN_LANE ? 'the run' : `@${lane.agent}`} ${bar.label}: ${((bar.endMs - bar.startMs) / 1000).toFixed(1)} s`;
      out.push(
        `<rect x="${x(bar.startMs).toFixed(1)}" y="${y + 3}" width="${width.toFixed(1)}" height="${LANE - 6}" class="${bar.kind}">` +
          `<title>${html(title)}</title></rect>`,
      );
    }
  });
  for (const { agent, call } of calls) {
    const i = row.get(agent);
    if (i === undefined) continue;
    const input = call.usage.input + call.usage.cacheRead + call.usage.cacheWrite;
    const cost = `$${call.costUsd.toFixed(4)}${call.batch ? ', batched' : ''}`;
    const title = `@${agent} turn ${call.turn}, call ${call.step}: ${input} in, ${call.usage.output} out, ${cost}`;
    out.push(
      `<circle cx="${x(call.atMs!).toFixed(1)}" cy="${i * LANE + LANE / 2}" r="3" class="${call.batch ? 'call batched' : 'call'}">` +
        `<title>${html(title)}</title></circle>`,
    );
  }
  const height = lanes.length * LANE + 20;
  const seconds = (span / 1000).toFixed(1);
  out.push(`<text x="${LABEL}" y="${height - 4}" class="axis">0 s</text><text x="${WIDTH - 60}" y="${height - 4}" class="axis">${seconds} s</text>`);
  const box = `viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}"`;
  // A group, not an image: its lane names are links, which an image's children cannot be (its marks' titles are read as they are).
  const label = 'Timeline: a lane per agent, a bar per turn, wait and pause, a dot per model call';
  return `<div class="wide"><svg xmlns="http://www.w3.org/2000/svg" role="group" aria-label="${label}" ${box}>${out.join('')}</svg></div>`;
}
