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
      type: z.enum(['completions', 'chat', 'jetstream-proxy', 'jetstream-http', 'jetstream-grpc']).default('completions'),
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
    })
    .prefault({}),
  load: z
    .strictObject({
      type: z.enum(['constant', 'poisson', 'gamma', 'concurrency', 'trace', 'sweep']).default('constant'),
      burstiness: positive.default(1),
      stages: z.array(z.union([rateStage, concurrencyStage])).min(1).default([{ rate: 1, duration: 10_000 }]),
      warmup: duration.default(0),
      timeout: duration.default(300_000),
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
      type: z.enum(['synthetic', 'random', 'sharegpt', 'jsonl', 'shared_prefix']).default('synthetic'),
      path: z.string().optional(),
      input: length.default(32),
      output: length.optional(),
      max_prompt_tokens: whole(1).optional(),
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
      slo: z
        .strictObject({ ttft: duration.optional(), tpot: duration.optional(), itl: duration.optional(), ntpot: duration.optional(), latency: duration.optional() })
        .optional(),
    })
    .prefault({}),
  metrics: z
    .strictObject({
      type: z.enum(['none', 'prometheus']).default('none'),
      url: z.string().optional(),
      interval: duration.default(1000),
    })
    .prefault({}),
  output: z.strictObject({ dir: z.string().optional() }).prefault({}),
});

export type BenchConfig = z.output<typeof configSchema>;
export type LengthConfig = z.output<typeof length>;
