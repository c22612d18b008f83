import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/**
 * The dashboard's static files, served by the same process (no CDN: it works offline and behind a
 * firewall): its style sheet, its one small script, and uPlot (a chart library of ~50 KB, bundled
 * through npm) with its style sheet. Each is read or built once and served with an ETag.
 */

/**
 * Colours meet WCAG AA (4.5:1 for text) in both schemes; severities are never told by colour
 * alone (each badge says its word).
 */
const APP_CSS = `
:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --panel: #f6f8fa; --link: #0a55c2; --focus: #0a55c2;
  --critical-bg: #8b0a16; --critical-fg: #ffffff; --high-bg: #b42318; --high-fg: #ffffff; --medium-bg: #9a5b00; --medium-fg: #ffffff;
  --low-bg: #3b5b8a; --low-fg: #ffffff; --other-bg: #57606a; --other-fg: #ffffff; --kev-bg: #5b0f91; --kev-fg: #ffffff;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --fg: #e6edf3; --muted: #9ea7b3; --line: #30363d; --panel: #161b22; --link: #6cb6ff; --focus: #6cb6ff;
    --critical-bg: #ff8a8a; --critical-fg: #1b0004; --high-bg: #ffa07a; --high-fg: #1f0800; --medium-bg: #f2c55c; --medium-fg: #1d1300;
    --low-bg: #9cc3ff; --low-fg: #04152e; --other-bg: #b8c0cc; --other-fg: #11161c; --kev-bg: #d7b4ff; --kev-fg: #1c0533;
  }
}
* { box-sizing: border-box; }
html { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
body { margin: 0; }
a { color: var(--link); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, summary:focus-visible, main:focus-visible {
  outline: 3px solid var(--focus); outline-offset: 2px;
}
.skip { position: absolute; left: -999px; top: 0; background: var(--bg); padding: .5em 1em; z-index: 10; }
.skip:focus { left: 1em; }
header.top { display: flex; flex-wrap: wrap; align-items: center; gap: 1.5em; padding: .6em 1.5em; border-bottom: 1px solid var(--line); background: var(--panel); }
.brand { font-weight: 700; font-size: 1.15em; text-decoration: none; color: var(--fg); }
nav ul { list-style: none; display: flex; gap: 1.2em; margin: 0; padding: 0; }
nav a { text-decoration: none; padding: .2em 0; }
nav a[aria-current="page"] { font-weight: 700; border-bottom: 3px solid var(--link); }
form.search { margin-left: auto; display: flex; gap: .4em; align-items: center; }
form.signout { margin: 0; }
main { padding: 1em 1.5em 3em; max-width: 1400px; }
h1 { font-size: 1.5em; margin: .4em 0 .2em; word-break: break-all; }
h2 { font-size: 1.2em; margin: 1.6em 0 .5em; }
p.lead { color: var(--muted); margin-top: 0; }
.muted { color: var(--muted); }
input, select, button { font: inherit; color: inherit; background: var(--bg); border: 1px solid var(--line); border-radius: 4px; padding: .25em .5em; }
button { cursor: pointer; background: var(--panel); }
form.filters { display: flex; flex-wrap: wrap; gap: .8em 1.2em; align-items: end; margin: 1em 0; padding: .8em; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; }
form.filters label { display: flex; flex-direction: column; font-size: .9em; gap: .2em; }
form.filters label.check { flex-direction: row; align-items: center; gap: .4em; }
table { border-collapse: collapse; width: 100%; margin: .5em 0 1em; }
caption { text-align: left; font-weight: 600; padding: .3em 0; }
th, td { text-align: left; padding: .35em .6em; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--panel); font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:hover { background: var(--panel); }
code, .digest { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .92em; }
.sev, .kev { display: inline-block; padding: .05em .45em; border-radius: 3px; font-size: .85em; font-weight: 600; white-space: nowrap; }
.sev-defcon1, .sev-critical { background: var(--critical-bg); color: var(--critical-fg); }
.sev-high { background: var(--high-bg); color: var(--high-fg); }
.sev-medium { background: var(--medium-bg); color: var(--medium-fg); }
.sev-low { background: var(--low-bg); color: var(--low-fg); }
.sev-negligible, .sev-unknown { background: var(--other-bg); color: var(--other-fg); }
.kev { background: var(--kev-bg); color: var(--kev-fg); }
.cards { display: flex; flex-wrap: wrap; gap: 1em; margin: 1em 0; padding: 0; list-style: none; }
.cards li { border: 1px solid var(--line); border-radius: 6px; padding: .6em 1em; min-width: 9em; background: var(--panel); }
.cards .value { display: block; font-size: 1.6em; font-weight: 700; font-variant-numeric: tabular-nums; }
.pager { display: flex; gap: 1em; align-items: center; margin: 1em 0; }
.chart { margin: 1em 0; max-width: 900px; }
.chart-canvas { min-height: 240px; }
details { margin: .5em 0; }
.notice { padding: .8em 1em; border: 1px solid var(--line); border-left: 4px solid var(--link); background: var(--panel); border-radius: 4px; }
.error { border-left-color: var(--high-bg); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .3em 1.2em; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
ol.changes { padding-left: 1.6em; }
ol.changes > li { margin: 0 0 1.6em; }
table.diff { width: auto; min-width: 32em; margin: .4em 0; }
table.diff tr.changed td { font-weight: 600; }
table.diff tr.changed th::after { content: " (changed)"; font-weight: 400; color: var(--muted); }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;

/**
 * The browser side: draws the charts a page asks for (its #chart-data) with uPlot, reading colours
 * from the style sheet so both schemes work. Written here as a function so TypeScript checks it;
 * served as its source text. Everything else the pages do is plain HTML (links and GET forms).
 */
function clientMain(): void {
  type Chart = {
    kind: 'bars' | 'lines';
    target: string;
    labels?: string[];
    x: number[];
    series: Array<{ label: string; values: number[]; colour: string }>;
  };
  // The few browser APIs used, typed here: the server's TypeScript has no DOM library.
  interface Element {
    textContent: string | null;
    clientWidth: number;
    querySelector(selector: string): Element | null;
    setAttribute(name: string, value: string): void;
  }
  interface Browser {
    document: { getElementById(id: string): Element | null; documentElement: Element };
    getComputedStyle(element: Element): { getPropertyValue(name: string): string };
    uPlot?: {
      new (options: unknown, data: unknown, target: Element): unknown;
      paths: { bars?: (options: unknown) => unknown };
    };
  }
  const browser = globalThis as unknown as Browser;
  const data = browser.document.getElementById('chart-data');
  const uPlot = browser.uPlot;
  if (!data || !uPlot) return;
  const charts = JSON.parse(data.textContent ?? '{}') as Record<string, Chart>;
  const style = browser.getComputedStyle(browser.document.documentElement);
  const colour = (name: string) => style.getPropertyValue(name).trim() || '#888';
  const foreground = colour('--fg');
  const grid = colour('--line');
  for (const chart of Object.values(charts)) {
    const target = browser.document.getElementById(chart.target);
    if (!target) continue;
    const width = Math.min(target.clientWidth || 800, 900);
    const axis = { stroke: foreground, grid: { stroke: grid }, ticks: { stroke: grid } };
    const bars = chart.kind === 'bars' && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.6, 80] }) : undefined;
    const options = {
      width,
      height: 260,
      scales: {
        // Categories sit at 0..n-1: half a step of room each side, so every bar is whole.
        x: chart.kind === 'bars' ? { time: false, range: [-0.5, chart.x.length - 0.5] } : { time: true },
        // Counts start at zero.
        y: { range: (_u: unknown, _min: number, max: number) => [0, Math.max(1, Math.ceil(max * 1.1))] },
      },
      axes: [
        chart.labels
          ? { ...axis, splits: () => chart.x, values: (_u: unknown, ticks: number[]) => ticks.map((t) => chart.labels![t] ?? '') }
          : axis,
        // Whole numbers only: these are counts.
        { ...axis, values: (_u: unknown, ticks: number[]) => ticks.map((t) => (Number.isInteger(t) ? String(t) : '')) },
      ],
      // A legend only where there are several series; the page's Data table carries the numbers.
      legend: { show: chart.series.length > 1 },
      series: [
        {},
        ...chart.series.map((s) => ({
          label: s.label,
          stroke: colour(s.colour),
          width: 2,
          ...(bars ? { paths: bars, fill: colour(s.colour) } : {}),
        })),
      ],
    };
    target.textContent = '';
    new uPlot(options, [chart.x, ...chart.series.map((s) => s.values)], target);
    // The legend repeats what the Data table beside the chart says, in a table without headers: hidden from screen readers.
    target.querySelector('.u-legend')?.setAttribute('aria-hidden', 'true');
  }
}

// __name: what a bundler that keeps function names (esbuild, under the test runner) may call in the source.
const CLIENT_JS = `'use strict';\nvar __name = function (f) { return f; };\n(${clientMain.toString()})();\n`;

export interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

const asset = (text: string | Buffer, type: string): Asset => {
  const body = Buffer.isBuffer(text) ? text : Buffer.from(text);
  return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
};

const require = createRequire(import.meta.url);
let uplot: { js: Asset; css: Asset } | undefined;

/** The asset at /ui/assets/<name>, or undefined. */
export function uiAsset(name: string): Asset | undefined {
  switch (name) {
    case 'app.css':
      return (cache.css ??= asset(APP_CSS, 'text/css; charset=utf-8'));
    case 'app.js':
      return (cache.js ??= asset(CLIENT_JS, 'text/javascript; charset=utf-8'));
    case 'uplot.js':
    case 'uplot.css':
      uplot ??= {
        js: asset(readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js')), 'text/javascript; charset=utf-8'),
        css: asset(readFileSync(require.resolve('uplot/dist/uPlot.min.css')), 'text/css; charset=utf-8'),
      };
      return name === 'uplot.js' ? uplot.js : uplot.css;
    default:
      return undefined;
  }
}

const cache: { css?: Asset; js?: Asset } = {};
