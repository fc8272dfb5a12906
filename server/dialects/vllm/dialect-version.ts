/**
 * The vLLM releases whose wire shapes benchtruth reproduces. 0.10.2 added `return_token_ids`,
 * which put `prompt_token_ids`/`token_ids` into every completion choice and chat chunk; 0.10.1
 * is the last shape without them (the one of ../../../test/fixtures/vllm/completions-stream-2025-03.txt).
 */
export const VLLM_VERSIONS = ['0.10.1', '0.11'] as const;

export type VllmVersion = (typeof VLLM_VERSIONS)[number];

export const DEFAULT_VLLM_VERSION: VllmVersion = '0.11';

/** What `/version` reports for each dialect version. */
export const VLLM_RELEASE: Readonly<Record<VllmVersion, string>> = Object.freeze({ '0.10.1': '0.10.1', '0.11': '0.11.0' });

export function parseVllmVersion(raw: string): VllmVersion {
  const normalized = raw.trim().replace(/^v/, '');
  if (normalized === '0.11.0' || normalized === '0.11') return '0.11';
  if (normalized === '0.10.1' || normalized === '0.10.1.1') return '0.10.1';
  throw new Error(`expected one of ${VLLM_VERSIONS.join(', ')} (0.11 is the default), got ${JSON.stringify(raw)}`);
}

/** Whether choices and chunks carry the `prompt_token_ids`/`token_ids` fields (0.10.2 and later). */
export const hasTokenIdFields = (version: VllmVersion): boolean => version !== '0.10.1';
