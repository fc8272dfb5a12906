/**
 * Prometheus text exposition format (0.0.4) → samples grouped by metric family. Pure; tolerant
 * of what real exporters emit (HELP/TYPE in any order, timestamps, escaped label values).
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface PromSample {
  /** The sample's own name (`x_bucket`, `x_sum`, `x_count` for a histogram `x`). */
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface MetricFamily {
  name: string;
  type: MetricType;
  samples: PromSample[];
}

// An OpenMetrics exemplar (` # {trace_id="…"} 0.67`) may follow the value and timestamp.
// The label block ends at the first `}` outside a quoted value (a value may hold `}` itself).
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\})?\s+(\S+)(?:\s+[^\s#]\S*)?(?:\s+#\s.*)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?/gy;

function parseValue(text: string): number {
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return Number.NaN;
  return Number(text);
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  let match: RegExpExecArray | null;
  while ((match = LABEL.exec(text)) !== null) {
    labels[match[1] as string] = (match[2] as string).replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    if (LABEL.lastIndex >= text.length) break;
  }
  return labels;
}

/**
 * The family a sample belongs to: histogram/summary children map to their parent, and so do an
 * OpenMetrics counter's `_total` and `_created` (its TYPE line names the family without `_total`).
 */
function familyOf(name: string, types: ReadonlyMap<string, MetricType>): string {
  for (const suffix of ['_bucket', '_sum', '_count', '_created', '_total']) {
    if (name.endsWith(suffix)) {
      const parent = name.slice(0, -suffix.length);
      const type = types.get(parent);
      if (type === 'histogram' || type === 'summary') return parent;
      if (type === 'counter' && (suffix === '_total' || suffix === '_created') && !types.has(name)) return parent;
    }
  }
  return name;
}

export function parsePrometheusText(text: string): Map<string, MetricFamily> {
  const types = new Map<string, MetricType>();
  const lines = text.split('\n');
  for (const line of lines) {
    const match = /^#\s*TYPE\s+(\S+)\s+(\S+)/.exec(line);
    if (match !== null) types.set(match[1] as string, (['counter', 'gauge', 'histogram', 'summary'].includes(match[2] as string) ? match[2] : 'untyped') as MetricType);
  }
  const families = new Map<string, MetricFamily>();
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (match === null) continue;
    const name = match[1] as string;
    const family = familyOf(name, types);
    let entry = families.get(family);
    if (entry === undefined) families.set(family, (entry = { name: family, type: types.get(family) ?? 'untyped', samples: [] }));
    entry.samples.push({ name, labels: match[3] !== undefined ? parseLabels(match[3]) : {}, value: parseValue(match[4] as string) });
  }
  return families;
}

/** A stable key for a series: name plus sorted labels (minus the ones given). */
export function seriesKey(name: string, labels: Record<string, string>, without: readonly string[] = []): string {
  const parts = Object.keys(labels)
    .filter((k) => !without.includes(k))
    .sort()
    // Escaped as the exposition escapes them, so two different label sets never share a key.
    .map((k) => `${k}="${(labels[k] as string).replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`))}"`);
  return parts.length === 0 ? name : `${name}{${parts.join(',')}}`;
}
