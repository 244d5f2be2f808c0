/**
 * A time-series chart (uPlot, drawn on a canvas) with its numbers also as a table for screen readers
 * and for anyone who wants the exact values: the canvas is an image to assistive technology.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { theme } from './kit.tsx';
import { useValue } from './state.ts';
import { Scroll } from './ui.tsx';

export interface Series {
  label: string;
  values: (number | null)[];
  color: string;
}

/**
 * Series colours, each distinct (hue and lightness) and readable on the theme's background: twelve before
 * one repeats. The tokens --series-1..12 of styles.css, one set per theme; resolved when a chart is drawn
 * (a canvas takes no CSS variables) and drawn again when the theme changes.
 */
export const COLORS = Array.from({ length: 12 }, (_, i) => `var(--series-${i + 1})`);

/** A colour as the canvas takes it: a var(--token) read from the document's current theme. */
function resolve(color: string): string {
  const token = /^var\((--[\w-]+)\)$/.exec(color)?.[1];
  return token ? getComputedStyle(document.documentElement).getPropertyValue(token).trim() || '#888' : color;
}

/** Running sums of the series, for stacked bars. */
function stack(series: Series[]): Series[] {
  const sums: number[] = [];
  return series.map((s) => ({
    ...s,
    values: s.values.map((v, i) => {
      sums[i] = (sums[i] ?? 0) + (v ?? 0);
      return sums[i] as number;
    }),
  }));
}

export function TimeChart(props: {
  title: string;
  x: number[];
  series: Series[];
  unit: string;
  bars?: boolean;
  xLabel?: (s: number) => string;
  /** The time span shown (Unix seconds), e.g. the last hour, however few points there are. */
  span?: [number, number];
}) {
  const box = useRef<HTMLDivElement>(null);
  const shownTheme = useValue(theme);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    // As wide as its box (a phone's 390 px included), at most 960 px.
    const width = Math.max(240, Math.min(element.clientWidth || 720, 960));
    const ink = resolve('var(--muted)');
    const grid = resolve('var(--line)');
    const axis = { stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const bars = props.bars ? uPlot.paths.bars?.({ size: [0.8, 40] }) : undefined;
    // Bars are stacked: each series is drawn at the sum of itself and those before it, tallest first, so
    // every segment shows (the table below keeps the values of each series).
    const shown = props.bars ? stack(props.series) : props.series;
    const order = props.bars ? [...shown].reverse() : shown;
    const halfStep = props.x.length > 1 ? ((props.x[1] as number) - (props.x[0] as number)) / 2 : 1;
    const chart = new uPlot(
      {
        width,
        height: 240,
        legend: { show: true, live: false },
        cursor: { show: true, points: { show: false } },
        scales: {
          x: {
            time: true,
            ...(props.span && { range: () => props.span as [number, number] }),
            ...(props.bars && { range: (_u, min, max) => [min - halfStep, max + halfStep] as [number, number] }),
          },
          y: { range: (_u, min, max) => [Math.min(0, min), Math.max(1, max)] },
        },
        axes: [axis, { ...axis, label: props.unit, size: 60 }],
        series: [
          {},
          ...order.map((s) => ({
            label: s.label,
            stroke: resolve(s.color),
            width: props.bars ? 1 : 2,
            fill: props.bars ? resolve(s.color) : undefined,
            paths: bars,
            points: { show: !props.bars },
          })),
        ],
      },
      [props.x, ...order.map((s) => s.values)] as uPlot.AlignedData,
      element,
    );
    // The legend is a live readout of the cursor, not content: hidden from assistive technology, which
    // reads the table below instead.
    chart.root.querySelector('.u-legend')?.setAttribute('aria-hidden', 'true');
    return () => chart.destroy();
  }, [props.x, props.series, props.unit, props.bars, props.span, shownTheme]);
  const label = props.xLabel ?? ((s: number) => new Date(s * 1000).toLocaleTimeString());
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <div ref={box} role="img" aria-label={`${props.title}: chart; the values are in the table below.`} />
      <details>
        <summary>{props.title}: values as a table</summary>
        <Scroll>
          <table>
            <thead>
              <tr>
                <th scope="col">Time</th>
                {props.series.map((s) => (
                  <th scope="col" key={s.label}>
                    {s.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {props.x.map((x, i) => (
                <tr key={x}>
                  <th scope="row">{label(x)}</th>
                  {props.series.map((s) => (
                    <td key={s.label}>{s.values[i] ?? '—'}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      </details>
    </figure>
  );
}
