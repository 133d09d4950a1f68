import { html, type Html } from '../html.js';
import { grouped } from '../../core/grouped.js';

export interface ChartPoint {
  label: string;
  value: number | null;
}

const WIDTH = 360;
const HEIGHT = 96;
const TOP = 14;

/**
 * A bar chart as inline SVG, rendered on the server (markup, no script): one bar a bucket, the
 * largest value on top, each bar titled with its bucket and value, the latest value beside the title
 * and the first and last bucket's time under the axis. A null value (nothing to measure) leaves a gap.
 */
export function barChart(title: string, points: readonly ChartPoint[], format: (n: number) => string): Html {
  const max = Math.max(0, ...points.map((p) => p.value ?? 0));
  const step = WIDTH / Math.max(1, points.length);
  const bars = points.map((p, i) => {
    const v = p.value ?? 0;
    const h = max > 0 ? Math.max(v > 0 ? 1 : 0, ((HEIGHT - TOP) * v) / max) : 0;
    const x = (i * step + 1).toFixed(1);
    const y = (HEIGHT - h).toFixed(1);
    return html`<rect
      class="${p.value === null ? 'gap' : 'bar'}"
      x="${x}"
      y="${y}"
      width="${Math.max(1, step - 2).toFixed(1)}"
      height="${h.toFixed(1)}"
      ><title>${p.label}: ${p.value === null ? 'n/a' : format(p.value)}</title></rect
    >`;
  });
  const total = points.filter((p) => p.value !== null).length;
  const last = points[points.length - 1];
  const firstLabel = points[0]?.label;
  return html`<figure class="chart">
    <figcaption>
      ${title}
      <span class="now" title="the latest bucket${last ? `, ${last.label}` : ''}"
        >now <b>${last?.value === null || last === undefined ? 'n/a' : format(last.value)}</b></span
      >
      <span class="muted">max ${format(max)}</span>
    </figcaption>
    <svg
      viewBox="0 0 ${WIDTH} ${HEIGHT}"
      preserveAspectRatio="none"
      role="img"
      aria-label="${title}: ${total} buckets"
    >
      <line class="axis" x1="0" y1="${HEIGHT - 0.5}" x2="${WIDTH}" y2="${HEIGHT - 0.5}"></line>
      ${bars}
    </svg>
    ${
      firstLabel !== undefined && last
        ? html`<div class="axis-time" aria-hidden="true">
            <span>${firstLabel}</span><span>${last.label}</span>
          </div>`
        : ''
    }
  </figure>`;
}

export function formatRate(n: number): string {
  return `${(n * 100).toFixed(n < 0.1 ? 1 : 0)}%`;
}

export function formatSeconds(n: number): string {
  if (n < 60) return `${n.toFixed(n < 10 ? 1 : 0)}s`;
  if (n < 3600) return `${(n / 60).toFixed(1)}m`;
  return `${(n / 3600).toFixed(1)}h`;
}

export function formatCount(n: number): string {
  return grouped(Math.round(n));
}
