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
// Blanks may stand between the tokens, a name and its `{` too (the text format's rule).
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\})?\s+(\S+)(?:\s+[^\s#]\S*)?(?:\s+#\s.*)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?/gy;

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const SPECIAL = /^([+-]?)(inf|infinity|nan)$/i;

/**
 * A sample's value as Go's strconv.ParseFloat reads it (what Prometheus parses with); null for
 * text that is no number (`world`, `""`, `0x10`), whose line is then no sample: Prometheus fails
 * such a scrape, and a page of something else must not pass for one.
 */
function parseValue(text: string): number | null {
  if (DECIMAL.test(text)) return Number(text);
  const special = SPECIAL.exec(text);
  if (special === null) return null;
  if ((special[2] as string).toLowerCase() === 'nan') return Number.NaN;
  return special[1] === '-' ? -Infinity : Infinity;
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

const TYPE_LINE = /^#\s*TYPE\s+(\S+)\s+(\S+)/;
const KNOWN_TYPES: ReadonlySet<string> = new Set(['counter', 'gauge', 'histogram', 'summary']);

/** The TYPE lines' types; only the lines that start with `#` are looked at. */
function typesOf(text: string): Map<string, MetricType> {
  const types = new Map<string, MetricType>();
  for (let at = text.startsWith('#') ? 0 : text.indexOf('\n#'); at >= 0; at = text.indexOf('\n#', at + 1)) {
    const start = text.charCodeAt(at) === 0x0a ? at + 1 : at;
    const end = text.indexOf('\n', start);
    const match = TYPE_LINE.exec(text.slice(start, end < 0 ? text.length : end));
    if (match !== null) types.set(match[1] as string, (KNOWN_TYPES.has(match[2] as string) ? match[2] : 'untyped') as MetricType);
  }
  return types;
}

/**
 * Reads an exposition's samples a slice of lines at a time: `readLines(n)` takes up to n more
 * lines and says whether any are left, so a caller on a busy thread can read a large page
 * between other work.
 */
export class ExpositionReader {
  readonly families = new Map<string, MetricFamily>();
  /** Series already read: Prometheus refuses a duplicate sample, and a second value read as the next scrape would fake a change. */
  readonly #seen = new Set<string>();
  readonly #text: string;
  readonly #types: Map<string, MetricType>;
  #at = 0;

  constructor(text: string) {
    this.#text = text;
    this.#types = typesOf(text);
  }

  readLines(count: number): boolean {
    const text = this.#text;
    for (let n = 0; n < count; n++) {
      if (this.#at >= text.length) return false;
      const end = text.indexOf('\n', this.#at);
      const stop = end < 0 ? text.length : end;
      this.#readLine(text.slice(this.#at, stop).trim());
      this.#at = stop + 1;
    }
    return this.#at < text.length;
  }

  #readLine(line: string): void {
    if (line === '' || line.startsWith('#')) return;
    const match = SAMPLE.exec(line);
    if (match === null) return;
    const value = parseValue(match[4] as string);
    if (value === null) return;
    const name = match[1] as string;
    const labels = match[3] !== undefined ? parseLabels(match[3]) : {};
    const key = seriesKey(name, labels);
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    const family = familyOf(name, this.#types);
    let entry = this.families.get(family);
    if (entry === undefined) this.families.set(family, (entry = { name: family, type: this.#types.get(family) ?? 'untyped', samples: [] }));
    entry.samples.push({ name, labels, value });
  }
}

export function parsePrometheusText(text: string): Map<string, MetricFamily> {
  const reader = new ExpositionReader(text);
  reader.readLines(Infinity);
  return reader.families;
}

/** Resolves in the event loop's next check phase, after the I/O that was ready has been read. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The same, a slice of lines per turn of the event loop, so reads that arrive meanwhile are
 * stamped in between (a 10 MB page read at once held the measuring thread for most of a second).
 */
export async function parsePrometheusTextInSlices(text: string, linesPerSlice = 256, pause: () => Promise<void> = nextTurn): Promise<Map<string, MetricFamily>> {
  const reader = new ExpositionReader(text);
  while (reader.readLines(linesPerSlice)) await pause();
  return reader.families;
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
