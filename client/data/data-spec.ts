/** What `data:` in a config (or the flags) asks for, and the dataset it builds. */
import type { Dataset } from './dataset.ts';
import { jsonlDataset, shareGptDataset, type ShareGptLimits } from './file-datasets.ts';
import type { LengthDistribution } from './length-distribution.ts';
import { sharedPrefixDataset, syntheticDataset, type SharedPrefixSpec } from './synthetic-dataset.ts';

export type DataSpec =
  | { type: 'synthetic'; input: LengthDistribution; output: LengthDistribution }
  | { type: 'sharegpt'; path: string; output: LengthDistribution | null; limits?: Partial<ShareGptLimits> }
  /** `lineLengthsWin` (default true): a line's own `output_tokens` beats `output` (no length was configured). */
  | { type: 'jsonl'; path: string; output: LengthDistribution; lineLengthsWin?: boolean }
  | { type: 'shared_prefix'; sharedPrefix: SharedPrefixSpec; output: LengthDistribution };

export function buildDataset(spec: DataSpec, seed: number): Dataset {
  switch (spec.type) {
    case 'synthetic':
      return syntheticDataset(spec.input, spec.output, seed);
    case 'sharegpt':
      return shareGptDataset(spec.path, { output: spec.output, ...spec.limits }, seed);
    case 'jsonl':
      return jsonlDataset(spec.path, spec.output, seed, spec.lineLengthsWin ?? true);
    case 'shared_prefix':
      return sharedPrefixDataset(spec.sharedPrefix, spec.output, seed);
  }
}
