/**
 * The YAML configuration (`--config`), in sections like inference-perf's: api, server, load,
 * data, report, metrics, output. Strict: an unknown key or a wrong type is an error naming its
 * path. Durations are `250ms`, `1.5s`, `2m` or a bare number of seconds.
 */
import { z } from 'zod';
import { parseDurationMs } from '../../contracts/units.ts';

/** A duration in milliseconds, from `1.5s`-style text or bare seconds. */
export const duration = z.union([z.number().nonnegative(), z.string()]).transform((value, ctx) => {
  try {
    return parseDurationMs(value, 's');
  } catch {
    ctx.addIssue({ code: 'custom', message: `not a duration: ${JSON.stringify(value)} (write e.g. 250ms, 1.5s, 2m)` });
    return z.NEVER;
  }
});

const positive = z.number().positive();
/** An enum that also takes other tools' spellings (inference-perf's); errors list only ours. */
const enumWithAliases = <const T extends readonly [string, ...string[]]>(values: T, aliases: Readonly<Record<string, T[number]>>) =>
  z.preprocess((value) => (typeof value === 'string' && Object.hasOwn(aliases, value) ? aliases[value] : value), z.enum(values));
/** A duration that must be > 0 (a zero timeout would fail every request). */
const positiveDuration = duration.refine((ms) => ms > 0, 'must be longer than 0 (e.g. 30s)');
const httpUrl = z.string().refine((text) => {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}, 'must be an absolute http(s) URL, e.g. http://127.0.0.1:8000/metrics');
const whole = (min: number) => z.number().int().min(min);

const length = z.union([
  whole(1),
  z
    .strictObject({
      distribution: z.enum(['fixed', 'uniform', 'normal', 'lognormal']),
      value: whole(1).optional(),
      mean: positive.optional(),
      sd: z.number().nonnegative().optional(),
      min: whole(1).optional(),
      max: whole(1).optional(),
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

const rateStage = z.strictObject({ rate: positive, duration });
const concurrencyStage = z.strictObject({ concurrency: whole(1), count: whole(1) });

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
      base_url: z.string().optional(),
      model_name: z.string().optional(),
      api_key: z.string().optional(),
      lora: z.array(z.strictObject({ name: z.string().min(1), weight: positive })).default([]),
      /** inference-perf's server kind: all three speak the OpenAI-compatible API benchtruth sends. */
      type: z.enum(['vllm', 'sglang', 'tgi']).optional(),
      /** Sent as `ignore_eos` with every request, so outputs run to max tokens (inference-perf's default). */
      ignore_eos: z.boolean().default(true),
    })
    .prefault({}),
  load: z
    .strictObject({
      type: z.enum(['constant', 'poisson', 'gamma', 'concurrency', 'trace', 'sweep']).default('constant'),
      burstiness: positive.default(1),
      stages: z.array(z.union([rateStage, concurrencyStage])).min(1).default([{ rate: 1, duration: 10_000 }]),
      warmup: duration.default(0),
      timeout: positiveDuration.default(300_000),
      grace: duration.default(10_000),
      seed: whole(0).default(0),
      trace_file: z.string().optional(),
      sweep: z
        .strictObject({
          num_stages: whole(1).default(5),
          stage_duration: duration.default(10_000),
          probe_requests: whole(2).default(50),
          probe_concurrency: whole(1).default(16),
          spacing: z.enum(['linear', 'geometric']).default('linear'),
          arrival: z.enum(['constant', 'poisson']).default('constant'),
        })
        .prefault({}),
      workers: whole(1).default(1),
      shard: z
        .string()
        .regex(/^\d+\/\d+$/, 'write the shard as INDEX/COUNT, e.g. 0/4')
        .refine((s) => {
          const [i, n] = s.split('/').map(Number) as [number, number];
          return n >= 1 && i < n;
        }, 'shard INDEX must be below COUNT')
        .optional(),
    })
    .prefault({}),
  data: z
    .strictObject({
      type: enumWithAliases(['synthetic', 'random', 'sharegpt', 'jsonl', 'shared_prefix'], { shareGPT: 'sharegpt' }).default('synthetic'),
      path: z.string().optional(),
      input: length.default(32),
      output: length.optional(),
      /** ShareGPT pruning as vLLM's (defaults 4, 1024, 2048; client/data/file-datasets.ts). */
      min_tokens: whole(1).optional(),
      max_prompt_tokens: whole(1).optional(),
      max_total_tokens: whole(1).optional(),
      shared_prefix: z
        .strictObject({ num_groups: whole(1), prompts_per_group: whole(1), system_prompt_len: whole(1), question_len: whole(1) })
        .optional(),
    })
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
          percentiles: z.array(z.number()).optional(),
          use_server_output_tokens: z.boolean().optional(),
          max_error_messages: z.number().optional(),
        })
        .optional(),
      prometheus: z.strictObject({ summary: z.boolean().optional(), per_stage: z.boolean().optional() }).optional(),
      slo: z
        .strictObject({ ttft: duration.optional(), tpot: duration.optional(), itl: duration.optional(), ntpot: duration.optional(), latency: duration.optional() })
        .optional(),
    })
    .prefault({}),
  metrics: z
    .strictObject({
      type: enumWithAliases(['none', 'prometheus'], { default: 'none' }).default('none'),
      url: httpUrl.optional(),
      /** Default: prometheus.scrape_interval, else 1s. */
      interval: duration.optional(),
      /**
       * inference-perf's Prometheus client. benchtruth scrapes the model server's own /metrics
       * (or `url`) rather than querying a Prometheus server, so only scrape_interval is used.
       */
      prometheus: z
        .strictObject({ url: z.string().optional(), scrape_interval: duration.optional(), google_managed: z.boolean().optional(), filters: z.array(z.string()).optional() })
        .optional(),
    })
    .prefault({}),
  output: z.strictObject({ dir: z.string().optional() }).prefault({}),
  /** inference-perf's tokenizer section: accepted, unused (benchtruth counts tokens from usage, or its own tokenizer). */
  tokenizer: z.strictObject({ pretrained_model_name_or_path: z.string().optional(), token: z.string().optional(), trust_remote_code: z.boolean().optional() }).optional(),
});

export type BenchConfig = z.output<typeof configSchema>;
export type LengthConfig = z.output<typeof length>;
