/**
 * prometheus_client's `?name[]=` filter (the restricted registry behind vLLM's /metrics): only the
 * named samples, each under its family's HELP and TYPE; blank values restrict nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../../server/app.ts';

describe('/metrics?name[]=', () => {
  const server = buildServer({ seed: 1, model: 'm' });
  beforeAll(() => server.app.ready());
  afterAll(() => server.close());
  const scrape = async (query: string): Promise<string> => (await server.app.inject({ method: 'GET', url: `/metrics${query}` })).body;

  it('keeps only the named samples, with their family header', async () => {
    const body = await scrape('?name[]=vllm:num_requests_running&name%5B%5D=vllm:e2e_request_latency_seconds_count');
    expect(body.split('\n').filter((l) => !l.startsWith('#') && l !== '')).toEqual([
      'vllm:num_requests_running{model_name="m",engine="0"} 0',
      'vllm:e2e_request_latency_seconds_count{model_name="m",engine="0"} 0',
    ]);
    expect(body).toContain('# TYPE vllm:e2e_request_latency_seconds histogram\nvllm:e2e_request_latency_seconds_count');
    expect(body).not.toContain('_bucket');
  });

  it('answers nothing for a name no sample has, and everything for a blank name', async () => {
    expect(await scrape('?name[]=vllm:e2e_request_latency_seconds')).toBe('');
    // lora_requests_info's value is a clock reading, so compare the series, not the values.
    const series = (text: string): string[] => text.split('\n').map((l) => l.replace(/ [^ ]*$/, ''));
    expect(series(await scrape('?name[]='))).toEqual(series(await scrape('')));
  });
});
