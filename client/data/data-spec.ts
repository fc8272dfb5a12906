/** What `data:` in a config (or the flags) asks for, and the dataset it builds. */
import type { Dataset } from './dataset.ts';
import { jsonlDataset, jsonlEntries, packedDataset, packEntries, shareGptDataset, shareGptEntries, type PackedEntries, type ShareGptLimits } from './file-datasets.ts';
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

/**
 * The dataset of a `--workers` run, read in the main thread once: a file dataset's entries
 * (read, checked, tokenized and shuffled here, then packed into shared memory every worker
 * thread reads without a copy), or null for a dataset each worker builds from the spec (its
 * prompts are generated per request; building it here checks the spec). Throws as buildDataset.
 */
export function datasetForWorkers(spec: DataSpec, seed: number): PackedEntries | null {
  switch (spec.type) {
    case 'sharegpt':
      return packEntries('sharegpt', shareGptEntries(spec.path, { output: spec.output, ...spec.limits }), seed);
    case 'jsonl':
      return packEntries('jsonl', jsonlEntries(spec.path), seed);
    default:
      buildDataset(spec, seed);
      return null;
  }
}

/** A worker thread's dataset: over the entries the main thread packed, else built from the spec. Item for item buildDataset's. */
export function workerDataset(spec: DataSpec, seed: number, packed: PackedEntries | null): Dataset {
  if (packed === null) return buildDataset(spec, seed);
  switch (spec.type) {
    case 'sharegpt':
      return packedDataset(packed, spec.output, seed, false);
    case 'jsonl':
      return packedDataset(packed, spec.output, seed, spec.lineLengthsWin ?? true);
    default:
      throw new Error(`packed entries given for a ${spec.type} dataset`);
  }
}
