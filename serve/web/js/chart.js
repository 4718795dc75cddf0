// Usage by day as an inline SVG bar chart, with the same figures as a table
// for screen readers and for reading exact values.
import {h, money, num, tokens} from './dom.js';

/** usageChart draws cost per day; rows are pneuma history usage --by day rows. */
export function usageChart(rows) {
  if (!rows.length) return h('p', {class: 'muted'}, 'No usage recorded.');
  const days = rows.slice(-60);
  const W = 720, H = 200, pad = 28, bw = (W - pad) / days.length;
  const max = Math.max(...days.map((r) => r.cost_usd || 0), 0.01);
  const total = days.reduce((s, r) => s + (r.cost_usd || 0), 0);
  const svg = h('svg:svg', {viewBox: `0 0 ${W} ${H + 20}`, class: 'chart', role: 'img',
    'aria-label': `Cost per day over ${days.length} days, ${money(total)} in all, at most ${money(max)} a day`});
  svg.append(h('svg:line', {x1: pad, y1: H, x2: W, y2: H, class: 'axis'}));
  svg.append(h('svg:text', {x: 0, y: 12, class: 'label'}, money(max)));
  days.forEach((r, i) => {
    const v = r.cost_usd || 0;
    const bh = Math.max(v > 0 ? 1 : 0, (v / max) * (H - 20));
    const bar = h('svg:rect', {x: (pad + i * bw + bw * 0.1).toFixed(1), y: (H - bh).toFixed(1), width: (bw * 0.8).toFixed(1), height: bh.toFixed(1), class: 'bar'});
    bar.append(h('svg:title', {}, `${r.date}: ${money(v)}, ${num(tokens(r))} tokens`));
    svg.append(bar);
  });
  const label = (i, anchor) => svg.append(h('svg:text', {x: (pad + i * bw + bw / 2).toFixed(1), y: H + 16, 'text-anchor': anchor, class: 'label'}, days[i].date || ''));
  label(0, 'start');
  if (days.length > 1) label(days.length - 1, 'end');
  const table = h('details', {class: 'chart-data'}, h('summary', {}, 'Figures'),
    h('div', {class: 'scroll', role: 'region', 'aria-label': 'Usage by day', tabindex: '0'},
      h('table', {class: 'grid'},
        h('thead', {}, h('tr', {}, ['Day', 'API calls', 'Tokens', 'Cost'].map((c) => h('th', {scope: 'col'}, c)))),
        h('tbody', {}, rows.map((r) => h('tr', {}, h('th', {scope: 'row'}, r.date || ''), h('td', {class: 'n'}, num(r.api_calls)), h('td', {class: 'n'}, num(tokens(r))), h('td', {class: 'n'}, money(r.cost_usd))))))));
  return h('div', {}, svg, table);
}
