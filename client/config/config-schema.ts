/**
 * The YAML configuration (`--config`), in sections like inference-perf's: api, server, load,
 * data, report, metrics, output. Strict: an unknown key or a wrong type is an error naming its
 * path. Durations are `250ms`, `1.5s`, `2m` or a bare number of seconds.
 */
import { z } from 'zod';
import { parseDurationMs } from '../../contracts/units.ts';
import { MAX_SAMPLED_TOKENS } from '../data/length-distribution.ts';

/**
 * The longest client duration (a stage, warm-up, timeout, grace, scrape interval, SLO, trace
 * offset): one day. Node cannot arm a timer beyond 2^31-1 ms (24.8 days; it fires after 1 ms
 * instead), and no benchmark stage needs more than a day.
 */
export const MAX_CLIENT_DURATION_MS = 24 * 3_600_000;
/** Most requests one run may plan (rate × (warm-up + duration), summed over stages; a closed loop's count). */
export const MAX_PLANNED_SENDS = 4_000_000;
/** Most requests a closed loop holds in flight. */
export const MAX_CONCURRENCY = 100_000;
/** Most worker threads: each is a Node isolate with its own copy of the client. */
export const MAX_WORKERS = 64;
/** Longest prompt or output a length setting may ask for, in tokens (beyond every model's context). */
export const MAX_LENGTH_TOKENS = MAX_SAMPLED_TOKENS;

/** A bare number of seconds as people write it: `5`, `1.5`, `.5`, `1e3` (no hex, no sign). */
const BARE_SECONDS = /^(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i;

/** `text` in ms (a bare number is seconds), at most a day; throws with a message for the user. */
export function durationMs(value: string | number): number {
  const text = typeof value === 'number' ? String(value) : value.trim();
  if (Number.isNaN(value)) throw new Error('not a number');
  if (typeof value === 'number' && value < 0) throw new RangeError('must not be negative');
  if (text.startsWith('-')) throw new RangeError('must not be negative');
  let ms: number;
  if (typeof value === 'number') ms = value * 1000;
  else if (BARE_SECONDS.test(text)) ms = Number(text) * 1000;
  else ms = parseDurationMs(text, 's');
  if (!(ms <= MAX_CLIENT_DURATION_MS)) throw new RangeError(`out of range: at most 24h (${MAX_CLIENT_DURATION_MS / 1000} s)`);
  return ms;
}

const durationOf = (mustBePositive: boolean) =>
  z.unknown().transform((value, ctx) => {
    const fail = (message: string): never => {
      // `value`: a mistake in this value alone, not a rule across keys (resolve-config's file check).
      ctx.addIssue({ code: 'custom', message, params: { value: true } });
      return z.NEVER;
    };
    if (value === undefined) {
      ctx.addIssue({ code: 'custom', message: 'missing', params: { missing: true } });
      return z.NEVER;
    }
    if (typeof value !== 'string' && typeof value !== 'number') return fail(`expected a duration (e.g. 250ms, 1.5s, 2m), got ${Array.isArray(value) ? 'a list' : value === null ? 'nothing' : typeof value === 'object' ? 'a mapping' : typeof value}`);
    let ms: number;
    try {
      ms = durationMs(value);
    } catch (error) {
      if (error instanceof RangeError) return fail(mustBePositive && error.message === 'must not be negative' ? 'must be longer than 0 (e.g. 30s)' : error.message);
      return fail(`not a duration: ${JSON.stringify(String(value))} (write e.g. 250ms, 1.5s, 2m)`);
    }
    if (mustBePositive && !(ms > 0)) return fail('must be longer than 0 (e.g. 30s)');
    return ms;
  });

/** A duration in milliseconds, from `1.5s`-style text or bare seconds; 0 to 24h. */
export const duration = durationOf(false);

/** An ISO 8601 date and time with its zone (`Z` or `±hh:mm`), the only kind every machine reads alike. */
const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * A moment as epoch milliseconds: an ISO 8601 time with a zone, or epoch milliseconds (number
 * or digits), so shards on different machines can be given one shared start.
 */
/** Whether an ISO text's date is on the calendar: Date.parse rolls 2026-02-30 over into March. */
function dateExists(text: string): boolean {
  const [year, month, day] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
  return month >= 1 && month <= 12 && day >= 1 && day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

export const instant = z.unknown().transform((value, ctx) => {
  const hint = 'write an ISO 8601 time with its zone (e.g. 2026-12-01T09:00:00Z) or epoch milliseconds';
  const epochMs = typeof value === 'number' ? value : typeof value === 'string' && /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : typeof value === 'string' && ISO_WITH_ZONE.test(value.trim()) && dateExists(value.trim()) ? Date.parse(value.trim()) : Number.NaN;
  // Epoch milliseconds from 2001 to 2286: a number of seconds (10 digits) would be 1970.
  if (!Number.isFinite(epochMs) || epochMs < 1e12 || epochMs > 1e13) {
    const numeric = typeof value === 'number' || Number.isFinite(epochMs);
    const why = !numeric
      ? hint
      : epochMs >= 1e9 && epochMs < 1e10
        ? `that looks like epoch seconds; in epoch milliseconds it is ${epochMs * 1000}`
        : 'epoch milliseconds are taken from 1000000000000 (2001) to 10000000000000 (2286); or write an ISO 8601 time with its zone (e.g. 2026-12-01T09:00:00Z)';
    ctx.addIssue({ code: 'custom', message: `not a moment: ${JSON.stringify(value)} (${why})`, params: { value: true } });
    return z.NEVER;
  }
  return epochMs;
});

const positive = z.number().positive();
/** An enum that also takes other tools' spellings (inference-perf's); errors list only ours. */
const enumWithAliases = <const T extends readonly [string, ...string[]]>(values: T, aliases: Readonly<Record<string, T[number]>>) =>
  z.preprocess((value) => (typeof value === 'string' && Object.hasOwn(aliases, value) ? aliases[value] : value), z.enum(values));
/** A duration that must be > 0 (a zero timeout would fail every request, a zero interval scrape without pause). */
const positiveDuration = durationOf(true);
/**
 * An absolute http(s) URL. A mistake in the value alone (`params.value`), so the file is refused
 * for it even where a flag replaces that part of the file (resolve-config's file check).
 */
const httpUrlLike = (example: string) =>
  z.string().refine(
    (text) => {
      try {
        const url = new URL(text);
        return url.protocol === 'http:' || url.protocol === 'https:';
      } catch {
        return false;
      }
    },
    { message: `must be an absolute http(s) URL, e.g. ${example}`, params: { value: true } },
  );
const httpUrl = httpUrlLike('http://127.0.0.1:8000/metrics');
/** A whole number in [min, max]: the range checked first, so a huge number is told the field's own limit (zod's int() has its own, the safe-integer one). */
const whole = (min: number, max = Number.MAX_SAFE_INTEGER) => z.number().min(min).max(max).int();
const tokens = whole(1, MAX_LENGTH_TOKENS);
const tokenCount = z.number().positive().max(MAX_LENGTH_TOKENS);

/**
 * inference-perf's Distribution, with its defaults (min 10, max 1024, mean 512, std_dev 200,
 * normal); `variance` instead of `std_dev`; `total_count` accepted, unused. Its skew_normal and
 * poisson shapes are refused by name.
 */
const inferencePerfDistribution = z
  .strictObject({
    type: z.enum(['normal', 'lognormal', 'uniform', 'fixed', 'skew_normal', 'poisson']).default('normal'),
    min: tokens.default(10),
    max: tokens.default(1024),
    mean: z.number().nonnegative().max(MAX_LENGTH_TOKENS).default(512),
    std_dev: z.number().nonnegative().max(MAX_LENGTH_TOKENS).optional(),
    variance: z.number().nonnegative().max(MAX_LENGTH_TOKENS * MAX_LENGTH_TOKENS).optional(),
    total_count: whole(1).optional(),
    skew: z.number().optional(),
  })
  .superRefine((d, ctx) => {
    if (d.type === 'skew_normal' || d.type === 'poisson') ctx.addIssue({ code: 'custom', path: ['type'], message: `${d.type} is not drawn by benchtruth (use normal, lognormal, uniform or fixed)` });
    if (d.min > d.max) ctx.addIssue({ code: 'custom', path: ['min'], message: `min (${d.min}) cannot be greater than max (${d.max})` });
    if (d.std_dev !== undefined && d.variance !== undefined) ctx.addIssue({ code: 'custom', path: ['variance'], message: "give either 'std_dev' or 'variance', not both" });
  });

/**
 * inference-perf's generate_distribution refuses a normal mean outside min..max; its ShareGPT
 * reader never draws (min and max only filter conversations), so there any mean is fine.
 */
function checkDrawnMean(d: z.infer<typeof inferencePerfDistribution> | undefined, key: string, ctx: z.RefinementCtx): void {
  if (d !== undefined && d.type === 'normal' && (d.mean < d.min || d.mean > d.max)) ctx.addIssue({ code: 'custom', path: [key, 'mean'], message: `a normal mean (${d.mean}) must lie within min and max (${d.min}–${d.max})` });
}

const length = z.union([
  tokens,
  z
    .strictObject({
      distribution: z.enum(['fixed', 'uniform', 'normal', 'lognormal']),
      value: tokens.optional(),
      mean: tokenCount.optional(),
      sd: z.number().nonnegative().max(MAX_LENGTH_TOKENS).optional(),
      min: tokens.optional(),
      max: tokens.optional(),
    })
    .superRefine((l, ctx) => {
      const need = (key: 'value' | 'mean' | 'sd' | 'min' | 'max'): void => {
        if (l[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: `${l.distribution} needs ${key}` });
      };
      if (l.distribution === 'fixed') need('value');
      if (l.distribution === 'uniform') {
        need('min');
        need('max');
      }
      if (l.distribution === 'normal' || l.distribution === 'lognormal') {
        need('mean');
        need('sd');
      }
      if (l.min !== undefined && l.max !== undefined && l.min > l.max) ctx.addIssue({ code: 'custom', path: ['max'], message: `max ${l.max} is below min ${l.min}` });
    }),
]);

const rateStage = z.strictObject({ rate: positive, duration: positiveDuration });
const concurrencyStage = z.strictObject({ concurrency: whole(1, MAX_CONCURRENCY), count: whole(1, MAX_PLANNED_SENDS) });

/** `load.sweep`: given only with load.type sweep (resolve-config.ts refuses it elsewhere). */
const sweepSchema = z
  .strictObject({
    // A sweep spreads stages up to saturation: a thousand is already a day of 90 s stages.
    num_stages: whole(1, 1000).default(5),
    stage_duration: positiveDuration.default(10_000),
    probe_requests: whole(2, MAX_PLANNED_SENDS).default(50),
    probe_concurrency: whole(1, MAX_CONCURRENCY).default(16),
    spacing: z.enum(['linear', 'geometric']).default('linear'),
    arrival: z.enum(['constant', 'poisson']).default('constant'),
    /** benchtruth's spread of stage rates (from saturation/N) or inference-perf's (from 1 req/s); its sweep spelling sets the latter. */
    rates: z.enum(['benchtruth', 'inference-perf']).default('benchtruth'),
    /** inference-perf's probe time limit and saturation percentile: accepted, unused (benchtruth probes with a closed loop). */
    timeout: z.number().positive().optional(),
    saturation_percentile: z.number().min(0).max(100).optional(),
  });

/** What a sweep load runs with when the file gives no `load.sweep`. */
export const SWEEP_DEFAULTS = sweepSchema.parse({});

/**
 * `data.shared_prefix`: inference-perf's defaults (10 groups of 10 prompts, 100 + 50 tokens);
 * its own key names are read as these (inference-perf-spellings.ts).
 */
export const SHARED_PREFIX = z.strictObject({
  num_groups: whole(1, MAX_PLANNED_SENDS).default(10),
  prompts_per_group: whole(1, MAX_PLANNED_SENDS).default(10),
  system_prompt_len: tokens.default(100),
  question_len: tokens.default(50),
  /** inference-perf's prompt-generation seed: accepted, unused (prompts follow load.seed). */
  seed: z.number().int().optional(),
  /**
   * inference-perf's output length as a distribution (its `output_len` mapping, or the legacy
   * `output_distribution`), drawn as its sample_from_distribution draws it.
   */
  output_distribution: inferencePerfDistribution.optional(),
});

/**
 * Where inference-perf writes its reports: `path` (`{timestamp}` is the run's start,
 * YYYYmmdd-HHMMSS) and a prefix for each report file's name (a file name part: no `/`).
 */
const localStorage = z.strictObject({
  path: z.string().min(1, 'must not be empty').optional(),
  report_file_prefix: z
    .string()
    .refine((text) => !/[/\\\0]/.test(text) && text !== '.' && text !== '..', {
      message: 'must be a file-name prefix without / or \\ (fix: put folders in storage.local_storage.path)',
      params: { value: true },
    })
    .nullable()
    .optional(),
});

export const configSchema = z.strictObject({
  api: z
    .strictObject({
      type: enumWithAliases(['completions', 'chat', 'jetstream-proxy', 'jetstream-http', 'jetstream-grpc'], { completion: 'completions' }).default('completions'),
      streaming: z.boolean().default(false),
      usage: z.enum(['none', 'include', 'continuous']).default('continuous'),
      tokenizer_fallback: z.boolean().default(true),
      headers: z.record(z.string(), z.string()).default({}),
    })
    .prefault({}),
  server: z
    .strictObject({
      base_url: httpUrlLike('http://127.0.0.1:8000').optional(),
      model_name: z.string().min(1, 'must not be empty').optional(),
      api_key: z.string().optional(),
      lora: z.array(z.strictObject({ name: z.string().min(1), weight: positive })).default([]),
      /**
       * inference-perf's server kind: vllm, sglang and tgi speak the OpenAI-compatible API
       * benchtruth sends; `mock` (its in-process client, no server) is accepted here so a flag can
       * replace it, and refused when the run is resolved (resolve-config.ts).
       */
      type: z.enum(['vllm', 'sglang', 'tgi', 'mock']).optional(),
      /** Sent as `ignore_eos` with every request, so outputs run to max tokens (inference-perf's default). */
      ignore_eos: z.boolean().default(true),
    })
    .prefault({}),
  load: z
    .strictObject({
      // inference-perf's `concurrent` is our closed loop (its stage keys: inference-perf-spellings.ts).
      type: enumWithAliases(['constant', 'poisson', 'gamma', 'concurrency', 'trace', 'sweep'], { concurrent: 'concurrency' }).default('constant'),
      /** Gamma loads only; 1 when a gamma load gives none. */
      burstiness: positive.optional(),
      /** Stage loads only (not trace or sweep); DEFAULT_STAGES when none are given. */
      stages: z.array(z.union([rateStage, concurrencyStage])).min(1).optional(),
      warmup: duration.default(0),
      timeout: positiveDuration.default(300_000),
      grace: duration.default(10_000),
      /** When the schedule starts (epoch ms): shards given one start share one schedule. */
      start_at: instant.optional(),
      seed: whole(0).default(0),
      trace_file: z.string().min(1, 'must not be empty').optional(),
      sweep: sweepSchema.optional(),
      workers: whole(1, MAX_WORKERS).default(1),
      /**
       * inference-perf's worker and pacing knobs, accepted so its configs run unchanged, unused:
       * benchtruth never caps an open loop's in-flight requests (a late send shows as
       * schedule_delay), pools connections itself, and starts a stage once the last has drained.
       */
      interval: z.number().nonnegative().optional(),
      worker_max_concurrency: whole(1).optional(),
      worker_max_tcp_connections: whole(1).optional(),
      /** inference-perf's spelling of the LoRA traffic split: `split` is the weight (server.lora). */
      lora_traffic_split: z.array(z.strictObject({ name: z.string().min(1), split: positive })).min(1).optional(),
      shard: z
        .string()
        .regex(/^\d+\/\d+$/, 'write the shard as INDEX/COUNT, e.g. 0/4')
        .refine(
          (s) => {
            const [i, n] = s.split('/').map(Number) as [number, number];
            return n >= 1 && i < n;
          },
          { message: 'shard INDEX must be below COUNT', params: { value: true } },
        )
        .optional(),
    })
    .prefault({}),
  data: z
    .strictObject({
      /**
       * inference-perf's `shareGPT` is our `sharegpt` read by its rules rather than vLLM's
       * (`sharegpt_rules`, below); a wrong value is told our names.
       */
      type: z.union([z.enum(['synthetic', 'random', 'sharegpt', 'jsonl', 'shared_prefix']), z.literal('shareGPT')]).default('synthetic'),
      path: z.string().min(1, 'must not be empty').optional(),
      /** Synthetic and random data only (32 when none is given: DEFAULT_BENCH_OPTIONS.promptTokens); left out here so a file dataset can refuse one given. */
      input: length.optional(),
      output: length.optional(),
      /**
       * inference-perf's spelling of `input` / `output` (its Distribution): drawn for synthetic and
       * random data; for sharegpt, as inference-perf reads it, min and max only filter conversations.
       */
      input_distribution: inferencePerfDistribution.optional(),
      output_distribution: inferencePerfDistribution.optional(),
      /** ShareGPT pruning as vLLM's (defaults 4, 1024, 2048; client/data/file-datasets.ts). */
      min_tokens: tokens.optional(),
      max_prompt_tokens: tokens.optional(),
      max_total_tokens: whole(1, 2 * MAX_LENGTH_TOKENS).optional(),
      shared_prefix: SHARED_PREFIX.optional(),
    })
    .superRefine((data, ctx) => {
      if (data.type === 'sharegpt' || data.type === 'shareGPT') return;
      checkDrawnMean(data.input_distribution, 'input_distribution', ctx);
      checkDrawnMean(data.output_distribution, 'output_distribution', ctx);
    })
    // Which ShareGPT reader the spelling asks for: inference-perf's `shareGPT` skips only a
    // conversation under two turns or with an empty prompt; vLLM's `sharegpt` prunes by length.
    .transform(({ type, ...data }) => ({ ...data, type: type === 'shareGPT' ? ('sharegpt' as const) : type, sharegpt_rules: type === 'shareGPT' ? ('inference-perf' as const) : ('vllm' as const) }))
    .prefault({}),
  report: z
    .strictObject({
      per_request: z.boolean().default(false),
      /** `lpg` also writes the latency profile generator's JSON report. */
      format: z.enum(['inference-perf', 'lpg']).default('inference-perf'),
      progress: z.enum(['auto', 'bar', 'lines', 'off']).default('auto'),
      /**
       * inference-perf's report switches: `per_request` means `report.per_request`; the summary and
       * per-stage reports are always written; the rest are accepted so its configs run unchanged.
       */
      request_lifecycle: z
        .strictObject({
          summary: z.boolean().optional(),
          per_stage: z.boolean().optional(),
          per_request: z.boolean().optional(),
          per_adapter: z.boolean().optional(),
          per_adapter_stage: z.boolean().optional(),
          /** Further percentiles of every report distribution (`p99.9`, …), as inference-perf's list. */
          percentiles: z.array(z.number().min(0).max(100)).max(100).optional(),
          use_server_output_tokens: z.boolean().optional(),
          max_error_messages: z.number().optional(),
        })
        .optional(),
      prometheus: z.strictObject({ summary: z.boolean().optional(), per_stage: z.boolean().optional() }).optional(),
      slo: z
        .strictObject({ ttft: duration.optional(), tpot: duration.optional(), itl: duration.optional(), ntpot: duration.optional(), latency: duration.optional() })
        .optional(),
      /**
       * inference-perf's goodput objectives (seconds), judged by its rule: the ITL objective
       * bounds a request's mean gap, and a request without a value for one is not good.
       */
      goodput: z
        .strictObject({
          constraints: z
            .strictObject({ ttft: duration.optional(), tpot: duration.optional(), itl: duration.optional(), ntpot: duration.optional(), request_latency: duration.optional() })
            .default({}),
        })
        .nullable()
        .optional(),
    })
    .prefault({}),
  metrics: z
    .strictObject({
      type: enumWithAliases(['none', 'prometheus'], { default: 'none' }).default('none'),
      url: httpUrl.optional(),
      /** Default: prometheus.scrape_interval, else 1s. */
      interval: positiveDuration.optional(),
      /**
       * inference-perf's Prometheus client. benchtruth scrapes the model server's own /metrics
       * (or `url`) rather than querying a Prometheus server, so only scrape_interval is used.
       */
      prometheus: z
        .strictObject({ url: z.string().optional(), scrape_interval: positiveDuration.optional(), google_managed: z.boolean().optional(), filters: z.array(z.string()).optional() })
        .optional(),
    })
    .prefault({}),
  output: z.strictObject({ dir: z.string().min(1, 'must not be empty').optional() }).prefault({}),
  /**
   * inference-perf's `storage` section. `local_storage.path` is the output directory (as
   * output.dir) and `report_file_prefix` goes in front of each JSON report's name; the two
   * uploads are refused by name when the run is resolved (null, inference-perf's "none", passes).
   */
  storage: z
    .strictObject({
      local_storage: localStorage.optional(),
      google_cloud_storage: localStorage.extend({ bucket_name: z.string() }).nullable().optional(),
      simple_storage_service: localStorage
        .extend({
          bucket_name: z.string(),
          endpoint_url: z.string().nullable().optional(),
          region_name: z.string().nullable().optional(),
          addressing_style: z.enum(['auto', 'virtual', 'path']).nullable().optional(),
        })
        .nullable()
        .optional(),
    })
    .nullable()
    .optional(),
  /** inference-perf's tokenizer section: accepted, unused (benchtruth counts tokens from usage, or its own tokenizer). */
  tokenizer: z.strictObject({ pretrained_model_name_or_path: z.string().optional(), token: z.string().optional(), trust_remote_code: z.boolean().optional() }).optional(),
});

export type BenchConfig = z.output<typeof configSchema>;

/** The stages of a rate load that gives none. */
export const DEFAULT_STAGES: ReadonlyArray<{ rate: number; duration: number }> = [{ rate: 1, duration: 10_000 }];
export type LengthConfig = z.output<typeof length>;
