/** The human-readable summary printed at the end of a run: per-stage lines, then the overall table. */
import type { LifecycleReport, ReportDistribution } from './lifecycle-report.ts';

const ms = (x: number | null | undefined): string => (x === null || x === undefined ? '—' : (x * 1000).toFixed(2));
const num = (x: number | null | undefined, digits = 2): string => (x === null || x === undefined ? '—' : x.toFixed(digits));

/** An empty sample (null) prints dashes. */
function row(name: string, d: ReportDistribution | null): string {
  return `  ${name.padEnd(24)} ${ms(d?.mean).padStart(10)} ${ms(d?.median).padStart(10)} ${ms(d?.p90).padStart(10)} ${ms(d?.p99).padStart(10)} ${ms(d?.max).padStart(10)}`;
}

function intended(report: LifecycleReport): string {
  const l = report.load_summary;
  if (l.concurrency !== undefined && l.concurrency !== null) return `concurrency ${l.concurrency}`;
  return `intended ${num(l.intended_rate)} req/s`;
}

export function consoleSummary(report: LifecycleReport, stages: ReadonlyMap<number, LifecycleReport> = new Map()): string {
  const s = report.successes;
  const lines: string[] = [];
  if (stages.size > 1) {
    lines.push('stages:');
    for (const [stage, r] of stages) {
      // A closed loop's intended load already reads "concurrency N".
      const load = r.load_summary.load_type === undefined || r.load_summary.load_type === 'concurrency' ? intended(r) : `${r.load_summary.load_type} ${intended(r)}`;
      lines.push(
        `  stage ${stage}: ${load}, achieved ${num(r.load_summary.achieved_rate)} req/s, ` +
          `schedule delay p99 ${ms(r.load_summary.schedule_delay?.p99)} ms; ${r.successes.count} ok, ${r.failures.count} failed; ` +
          `TTFT p50 ${ms(r.successes.latency.time_to_first_token?.median)} ms; ${num(r.successes.throughput.output_tokens_per_sec, 1)} output tok/s`,
      );
    }
  }
  lines.push(
    `requests: ${report.load_summary.count}  successes: ${s.count}  failures: ${report.failures.count}`,
    `rate: ${intended(report)}, achieved ${num(report.load_summary.achieved_rate)} req/s; schedule delay p99 ${ms(report.load_summary.schedule_delay?.p99)} ms`,
    `throughput: ${num(s.throughput.requests_per_sec)} req/s, ${num(s.throughput.output_tokens_per_sec, 1)} output tok/s, ${num(s.throughput.total_tokens_per_sec, 1)} total tok/s`,
    `  ${'latency (ms)'.padEnd(24)} ${'mean'.padStart(10)} ${'p50'.padStart(10)} ${'p90'.padStart(10)} ${'p99'.padStart(10)} ${'max'.padStart(10)}`,
    row('time to first token', s.latency.time_to_first_token),
    row('inter-token latency', s.latency.inter_token_latency),
    row('time per output token', s.latency.time_per_output_token),
    row('normalized TPOT', s.latency.normalized_time_per_output_token),
    row('request latency', s.latency.request_latency),
  );
  const g = report.goodput;
  if (g !== undefined) {
    lines.push(`goodput: ${g.good_requests}/${s.count} met every SLO (${num(g.good_fraction === null ? null : g.good_fraction * 100, 1)}%), ${num(g.requests_per_sec)} req/s, ${num(g.output_tokens_per_sec, 1)} output tok/s`);
  }
  for (const [kind, entry] of Object.entries(report.failures.by_kind)) {
    // A server may answer with an empty body: its sample says so rather than print nothing.
    const sample = entry.sample_messages.find((message) => message !== '');
    lines.push(`failures ${kind}: ${entry.count} (${sample === undefined ? 'an empty message' : `e.g. ${printable(sample)}`})`);
  }
  return lines.join('\n');
}

/**
 * A server's words as one line a terminal shows as they are: control characters (escape
 * sequences that could clear or repaint the screen, line breaks) written as JSON escapes.
 */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (char) => `\\u${(char.codePointAt(0) as number).toString(16).padStart(4, '0')}`);
}

/**
 * The client's own longest stall while measuring: it bounds how late its stamps can be, so a run
 * measured through a stall (a busy machine, a long GC) does not look clean.
 */
export function clientStallLine(maxStallMs: number): string {
  return `client: longest stall ${maxStallMs.toFixed(1)} ms (event loop or GC; arrival stamps taken inside one are late by up to its length)`;
}
