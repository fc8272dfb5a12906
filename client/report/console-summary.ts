/** The human-readable summary printed at the end of a run. */
import type { LifecycleReport, ReportDistribution } from './lifecycle-report.ts';

const ms = (x: number | null): string => (x === null ? '—' : (x * 1000).toFixed(2));
const num = (x: number | null, digits = 2): string => (x === null ? '—' : x.toFixed(digits));

function row(name: string, d: ReportDistribution): string {
  return `  ${name.padEnd(24)} ${ms(d.mean).padStart(10)} ${ms(d.p50).padStart(10)} ${ms(d.p90).padStart(10)} ${ms(d.p99).padStart(10)} ${ms(d.max).padStart(10)}`;
}

export function consoleSummary(report: LifecycleReport): string {
  const s = report.successes;
  const lines = [
    `requests: ${report.load_summary.count}  successes: ${s.count}  failures: ${report.failures.count}`,
    `rate: intended ${num(report.load_summary.intended_rate)} req/s, achieved ${num(report.load_summary.achieved_rate)} req/s; schedule delay p99 ${ms(report.load_summary.schedule_delay.p99)} ms`,
    `throughput: ${num(s.throughput.requests_per_sec)} req/s, ${num(s.throughput.output_tokens_per_sec, 1)} output tok/s, ${num(s.throughput.total_tokens_per_sec, 1)} total tok/s`,
    `  ${'latency (ms)'.padEnd(24)} ${'mean'.padStart(10)} ${'p50'.padStart(10)} ${'p90'.padStart(10)} ${'p99'.padStart(10)} ${'max'.padStart(10)}`,
    row('time to first token', s.latency.time_to_first_token),
    row('inter-token latency', s.latency.inter_token_latency),
    row('time per output token', s.latency.time_per_output_token),
    row('normalized TPOT', s.latency.normalized_time_per_output_token),
    row('request latency', s.latency.request_latency),
  ];
  for (const [kind, entry] of Object.entries(report.failures.by_kind)) {
    lines.push(`failures ${kind}: ${entry.count} (e.g. ${entry.sample_messages[0] ?? ''})`);
  }
  return lines.join('\n');
}
