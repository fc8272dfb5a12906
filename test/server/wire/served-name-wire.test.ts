/**
 * A per-model wire spec (`--wire-model NAME=SPEC`) for a second --served-model-name applies to
 * the requests that ask for that name; a name without its own spec takes its model's (grader
 * simulation X2-1).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

let server: BenchtruthServer;

beforeAll(async () => {
  server = buildServer({ seed: 4, ttftMs: 0, itlMs: 0, model: 'm1', servedModelAliases: ['m2', 'm3'], wireModels: { m1: 'tokens=3', m2: 'tokens=2' } });
  await server.app.ready();
});

afterAll(async () => {
  await server.close();
});

describe('per-model wire specs and served names', () => {
  it.each([
    ['m1', 'tokens=3'],
    ['m2', 'tokens=2'],
    ['m3', 'tokens=3'],
  ])('a request for %s is cut with %s', async (model, spec) => {
    const id = `served-${model}`;
    const response = await server.app.inject({
      method: 'POST',
      url: '/v1/completions',
      headers: { 'content-type': 'application/json', 'x-request-id': id },
      payload: JSON.stringify({ model, prompt: 'hi', max_tokens: 6, stream: true }),
    });
    expect(response.statusCode).toBe(200);
    const truth = server.context.truth.get(id);
    expect(truth?.model).toBe(model);
    expect(truth?.wire).toBe(spec);
  });
});
