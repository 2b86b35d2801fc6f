/** The page's styles: system fonts only (no web font is fetched), light and dark. */
export const PAGE_STYLE = `
:root { color-scheme: light dark; --fg: #1f2328; --bg: #fff; --muted: #59636e; --line: #d1d9e0; --turn: #0969da; --failed: #cf222e; --wait: #bf8700;
  --ok: #1a7f37; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --line: #3d444d; --turn: #4493f8; --failed: #f85149;
  --wait: #d29922; --ok: #3fb950; }
}
body { font: 14px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); max-width: 1100px; margin: 0 auto;
  padding: 1rem 1.5rem 4rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; margin-top: 2rem; }
h3 { font-size: 1rem; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { text-align: left; padding: .2rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
.cost td:nth-child(n+3), .cost tfoot td { text-align: right; font-variant-numeric: tabular-nums; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .2rem 0; font: 12.5px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
code { font: 12.5px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.status { font-weight: 600; } .status-success, .status-idle { color: var(--ok); }
.status-failure, .status-error, .status-provider_error, .status-limit, .status-refused { color: var(--failed); }
.status-waiting { color: var(--wait); }
.note, .none, .left-out, footer, .permission, .template, .owner, .system { color: var(--muted); }
.left-out { border-left: 3px solid var(--wait); padding-left: .6rem; }
.messages { list-style: none; padding: 0; } .messages li { border-bottom: 1px solid var(--line); padding: .3rem 0; } .who { font-size: 12px; }
.tree, .tree ul { list-style: none; padding-left: 1.2rem; } .tree { padding-left: 0; } .subtree { font-variant-numeric: tabular-nums; }
details.call { border-bottom: 1px solid var(--line); padding: .15rem 0; } details.call summary { cursor: pointer; font-size: 12.5px; }
.tool { margin-left: 1rem; } .result { color: var(--muted); } .result.error { color: var(--failed); }
.winner { color: var(--ok); }
svg { max-width: 100%; height: auto; } svg .lane, svg .axis { font: 11px system-ui, sans-serif; fill: var(--fg); } svg .rule { stroke: var(--line); }
svg .turn { fill: var(--turn); } svg .failed { fill: var(--failed); } svg .wait { fill: var(--wait); } svg .call { fill: var(--fg); }
svg .call.batched { fill: none; stroke: var(--fg); }
nav#filter { position: sticky; top: 0; background: var(--bg); border-bottom: 1px solid var(--line); padding: .4rem 0; font-size: 12.5px; z-index: 1; }
nav#filter label { white-space: nowrap; margin-right: .4rem; }
[data-hidden] { display: none; }
.wide { overflow-x: auto; max-width: 100%; } .graders td { overflow-wrap: anywhere; } .wide > svg { max-width: none; width: 100%; min-width: 640px; }
details.instances { display: inline; } details.instances[open] { display: block; padding-left: 1rem; }
@media (max-width: 600px) { body { padding: .5rem .75rem 3rem; } th, td { padding: .2rem .35rem; } h1 { font-size: 1.25rem; } }
@media print {
  nav#filter { display: none !important; } [data-hidden] { display: revert; }
  body { max-width: none; padding: 0; font-size: 11pt; } .wide { overflow: visible; } .wide > svg { min-width: 0; }
  h2 { break-after: avoid; } details.call, article, tr { break-inside: avoid; } a { color: inherit; text-decoration: none; }
}
`;

/**
 * The page's one script (it runs by its nonce): filter by agent (or by template, for all the agents
 * made from it), open or close every call, open every call to print. The page says everything
 * without it; the filter shows only where it works, and is never printed.
 */
export const PAGE_SCRIPT = `
(() => {
  const nav = document.getElementById('filter');
  if (!nav) return;
  nav.hidden = false;
  const picks = [...document.querySelectorAll('input.pick')];
  const apply = () => {
    const shown = new Set(picks.filter((p) => p.checked).map((p) => p.value));
    for (const el of document.querySelectorAll('[data-agent]')) {
      if (shown.has(el.getAttribute('data-agent'))) el.removeAttribute('data-hidden');
      else el.setAttribute('data-hidden', '');
    }
  };
  for (const p of picks) p.addEventListener('change', apply);
  const every = (checked) => () => { for (const p of picks) p.checked = checked; apply(); };
  document.getElementById('all').addEventListener('click', every(true));
  document.getElementById('none').addEventListener('click', every(false));
  const calls = (open) => () => { for (const d of document.querySelectorAll('details.call')) d.open = open; };
  document.getElementById('open').addEventListener('click', calls(true));
  document.getElementById('close').addEventListener('click', calls(false));
  // A template's box checks or unchecks each agent made from it.
  for (const t of document.querySelectorAll('input.pick-template'))
    t.addEventListener('change', () => {
      for (const p of picks) if (p.getAttribute('data-template') === t.value) p.checked = t.checked;
      apply();
    });
  // Printed, every call is shown open, and closed again after as it was.
  let closed = [];
  window.addEventListener('beforeprint', () => {
    closed = [...document.querySelectorAll('details.call:not([open])')];
    for (const d of closed) d.open = true;
  });
  window.addEventListener('afterprint', () => { for (const d of closed) d.open = false; closed = []; });
})();
`;
