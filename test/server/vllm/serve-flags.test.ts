import { describe, expect, it } from 'vitest';
import { CliError } from '../../../contracts/cli-error.ts';
import { parseByteSize, vllmOptionsFromFlags } from '../../../server/cli/vllm-serve-flags.ts';

describe('vLLM serve flags', () => {
  it('turns flags into options', () => {
    expect(
      vllmOptionsFromFlags({
        vllmVersion: 'v0.10.1',
        mode: 'echo',
        tokenizer: 'o200k_base',
        apiKey: 'k',
        maxBodySize: '2MiB',
        loraModules: ['sql=/a/sql', '{"name":"chat","path":"/a/chat","base_model_name":"base"}'],
        eosAfter: '12',
      }),
    ).toEqual({
      vllmVersion: '0.10.1',
      mode: 'echo',
      tokenizer: 'o200k_base',
      apiKey: 'k',
      maxBodySizeBytes: 2 * 1024 * 1024,
      loraModules: [
        { name: 'sql', path: '/a/sql', baseModelName: null },
        { name: 'chat', path: '/a/chat', baseModelName: 'base' },
      ],
      eosAfterTokens: 12,
    });
    expect(vllmOptionsFromFlags({})).toEqual({});
    // vLLM's `args.api_key or envs.VLLM_API_KEY` (audit 17-V10).
    expect(vllmOptionsFromFlags({}, { VLLM_API_KEY: 'sekret' })).toEqual({ apiKey: 'sekret' });
    expect(vllmOptionsFromFlags({}, { VLLM_API_KEY: '' })).toEqual({});
    expect(vllmOptionsFromFlags({ apiKey: 'flag' }, { VLLM_API_KEY: 'env' })).toEqual({ apiKey: 'flag' });
    // llm-d-inference-sim's replica names (audit 17-D1).
    expect(vllmOptionsFromFlags({}, { POD_NAME: 'sim-0', POD_NAMESPACE: 'llm-d' })).toEqual({ podName: 'sim-0', podNamespace: 'llm-d' });
    expect(() => vllmOptionsFromFlags({}, { POD_NAME: 'a\nb' })).toThrow(/^POD_NAME: expected a name an HTTP header can carry/);
  });

  it.each([
    [{ vllmVersion: '0.9' }, '--vllm-version'],
    [{ mode: 'loud' }, '--mode'],
    [{ tokenizer: 'llama3' }, '--tokenizer'],
    [{ maxBodySize: 'lots' }, '--max-body-size'],
    [{ loraModules: ['no-equals-sign'] }, '--lora-modules'],
    [{ eosAfter: '0' }, '--eos-after'],
  ])('rejects %j with one CliError naming %s', (flags, flag) => {
    expect(() => vllmOptionsFromFlags(flags)).toThrow(CliError);
    expect(() => vllmOptionsFromFlags(flags)).toThrow(new RegExp(`^${flag}: `));
  });

  it.each([
    ['1048576', 1048576],
    ['512kb', 524288],
    ['16MiB', 16777216],
    ['1.5k', 1536],
  ])('reads the size %s as %d bytes', (raw, bytes) => {
    expect(parseByteSize(raw)).toBe(bytes);
  });
});
