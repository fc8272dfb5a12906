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
    // vLLM 0.11 answers under the first served name, whichever was asked for (review 23).
    expect(truth?.model).toBe('m1');
    expect(truth?.wire).toBe(spec);
  });
});

describe('the model a response names (review 23: 0.11 answered under the name asked for)', () => {
  it.each([
    ['0.11', '/v1/completions', { prompt: 'hi' }, 'm1'],
    ['0.11', '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] }, 'm1'],
    ['0.10.1', '/v1/completions', { prompt: 'hi' }, 'm2'],
    ['0.10.1', '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] }, 'm2'],
  ] as const)('vLLM %s, %s asked for m2: "model" is %s', async (vllmVersion, url, body, answered) => {
    const versioned = buildServer({ seed: 4, ttftMs: 0, itlMs: 0, model: 'm1', servedModelAliases: ['m2'], vllmVersion, loraModules: [{ name: 'sql', path: '/loras/sql', baseModelName: null }] });
    try {
      for (const [asked, expected] of [['m2', answered], ['m1', 'm1'], ['sql', 'sql']] as const) {
        for (const stream of [false, true]) {
          const response = await versioned.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ model: asked, max_tokens: 2, stream, ...body }) });
          expect(response.statusCode).toBe(200);
          const first = stream ? response.body.split('\n\n')[0]?.replace(/^data: /, '') : response.body;
          expect((JSON.parse(first ?? '') as { model: string }).model).toBe(expected);
        }
      }
    } finally {
      await versioned.close();
    }
  });
});
