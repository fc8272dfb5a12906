/**
 * Bodies as FastAPI reads them (Starlette's json.loads on the bytes): a leading UTF-8 BOM is
 * dropped and Python's NaN / Infinity / -Infinity are values, on the vLLM and the JetStream
 * routes alike; what Python refuses is still refused (audit 7-R2), bytes that are not UTF-8
 * included.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import { laxInt } from '../../../server/dialects/pydantic-lax.ts';
import { parsePythonJson } from '../../../server/dialects/python-json.ts';

let server: BenchtruthServer;

beforeAll(async () => {
  server = buildServer({ seed: 3, ttftMs: 0, itlMs: 0, model: 'fake-model' });
  await server.app.ready();
});

afterAll(async () => {
  await server.close();
});

const post = (url: string, payload: string) => server.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload });

describe('request bodies FastAPI reads', () => {
  it.each([
    ['/v1/completions', '\ufeff{"model":"fake-model","prompt":"hi","max_tokens":2}'],
    ['/v1/completions', '{"model":"fake-model","prompt":"hi","max_tokens":2,"x":Infinity,"y":[NaN,-Infinity]}'],
    ['/v1/chat/completions', '\ufeff{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}'],
    ['/generate', '\ufeff{"prompt":"hi","max_tokens":2}'],
    ['/generate', '{"prompt":"hi","max_tokens":2,"temperature":NaN}'],
    ['/v1/generate', '\ufeff{"max_tokens":2,"text_content":{"text":"hi"}}'],
  ])('%s serves %j', async (url, payload) => {
    expect((await post(url, payload)).statusCode).toBe(200);
  });

  it('what Python refuses is still a JSON decode error, with Python’s reason on JetStream', async () => {
    expect((await post('/v1/completions', '{"model":"fake-model","prompt":"hi","max_tokens":nan}')).statusCode).toBe(400);
    const jetstream = await post('/generate', '\ufeff{"prompt": nan}');
    expect(jetstream.statusCode).toBe(422);
    expect(jetstream.body).toContain('Expecting value');
  });
});

describe('bytes that are not UTF-8', () => {
  // Starlette's json.loads raises UnicodeDecodeError; FastAPI answers HTTPException(400).
  const latin1 = (text: string): Buffer => Buffer.from(text, 'latin1');
  const send = (url: string, payload: Buffer, id: string) =>
    server.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', 'x-request-id': id }, payload });

  it("vLLM: 400 in vLLM's HTTPException shape, the connection kept, and a truth record", async () => {
    const response = await send('/v1/completions', latin1('{"model":"fake-model","prompt":"caf\u00e9","max_tokens":2}'), 'latin1-vllm');
    expect(response.statusCode).toBe(400);
    expect(response.body).toBe('{"error":{"message":"There was an error parsing the body","type":"Bad Request","param":null,"code":400}}');
    expect(response.headers.connection).not.toBe('close');
    expect(server.context.truth.get('latin1-vllm')).toMatchObject({ status: 400, end: { how: 'completed' } });
  });

  it("JetStream: 400 in FastAPI's shape, with a truth record", async () => {
    for (const url of ['/generate', '/v1/generate']) {
      const id = `latin1-${url}`;
      const response = await send(url, latin1('{"prompt":"caf\u00e9","max_tokens":2,"text_content":{"text":"caf\u00e9"}}'), id);
      expect(response.statusCode).toBe(400);
      expect(response.body).toBe('{"detail":"There was an error parsing the body"}');
      expect(server.context.truth.get(id)).toMatchObject({ status: 400, dialect: 'jetstream' });
    }
  });

  it('valid UTF-8 of every plane is read as before', async () => {
    const response = await send('/v1/completions', Buffer.from('{"model":"fake-model","prompt":"café 日本 🎉","max_tokens":2}', 'utf8'), 'utf8-ok');
    expect(response.statusCode).toBe(200);
  });
});

describe('integers longer than Python converts (4300 digits, audit 10 Z2-3)', () => {
  const digits = (n: number): string => `1${'0'.repeat(n - 1)}`;

  it("are FastAPI's 400 on both dialects, in an ignored field too; 4300 digits and long floats are read", async () => {
    const vllm = await post('/v1/completions', `{"model":"fake-model","prompt":"hi","max_tokens":2,"x":${digits(5001)}}`);
    expect(vllm.statusCode).toBe(400);
    expect(vllm.body).toBe('{"error":{"message":"There was an error parsing the body","type":"Bad Request","param":null,"code":400}}');
    for (const url of ['/generate', '/v1/generate']) {
      const jetstream = await post(url, `{"prompt":"hi","max_tokens":2,"text_content":{"text":"hi"},"x":-${digits(4301)}}`);
      expect(jetstream.statusCode).toBe(400);
      expect(jetstream.body).toBe('{"detail":"There was an error parsing the body"}');
    }
    expect((await post('/v1/completions', `{"model":"fake-model","prompt":"hi","max_tokens":2,"x":${digits(4300)},"y":${digits(5000)}.5,"z":${digits(5000)}e3}`)).statusCode).toBe(200);
  });

  it('inside a string they are text', () => {
    expect(parsePythonJson(`{"a":"${digits(5000)}"}`)).toMatchObject({ ok: true });
    expect(parsePythonJson(`{"a":"\\\\",  "b":${digits(5000)}}`)).toMatchObject({ ok: false, kind: 'value' });
  });
});

describe('bodies nested deeper than Python’s json recurses (audit 16-J finding 8)', () => {
  const nested = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

  it("are FastAPI's 400 on both dialects; 1000 levels are read, and brackets inside strings are text", async () => {
    const vllm = await post('/v1/completions', `{"model":"fake-model","prompt":"hi","max_tokens":2,"x":${nested(3000)}}`);
    expect(vllm.statusCode).toBe(400);
    expect(vllm.body).toBe('{"error":{"message":"There was an error parsing the body","type":"Bad Request","param":null,"code":400}}');
    for (const url of ['/generate', '/v1/generate']) {
      const jetstream = await post(url, `{"prompt":"hi","max_tokens":2,"x":${nested(100_000)}}`);
      expect(jetstream.statusCode).toBe(400);
      expect(jetstream.body).toBe('{"detail":"There was an error parsing the body"}');
    }
    expect((await post('/v1/completions', `{"model":"fake-model","prompt":"hi","max_tokens":2,"x":${nested(998)}}`)).statusCode).toBe(200);
    expect(parsePythonJson(`{"a":"${'['.repeat(5000)}"}`)).toMatchObject({ ok: true });
  });
});

describe('parsePythonJson', () => {
  it('reads every JSON text as JSON.parse does, and the constants inside any string untouched', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value);
        expect(parsePythonJson(text)).toEqual({ ok: true, value: JSON.parse(text) as unknown });
        const withConstant = `[${text},NaN,"NaN \\" Infinity",-Infinity]`;
        expect(parsePythonJson(withConstant)).toEqual({ ok: true, value: [JSON.parse(text) as unknown, Number.NaN, 'NaN " Infinity', Number.NEGATIVE_INFINITY] });
      }),
      { seed: 0x70a, numRuns: 300 },
    );
  });
});

describe('pydantic’s lax integer text (audit 7-R2)', () => {
  it.each([
    ['5.0', 5],
    [' 1_000 ', 1000],
    ['+2_0.00', 20],
    ['-3', -3],
  ])('%j is %d', (text, value) => {
    expect(laxInt(text)).toBe(value);
  });

  // "5." as pydantic 2.13.4 (pydantic-core 2.46.4) reads it: no integer (review 21-jetstream).
  it.each(['5.5', '5.', '1__0', '_1', '1_', '1e3', '', '0x10', '5.0.0'])('%j is int_parsing', (text) => {
    expect(laxInt(text)).toMatchObject({ type: 'int_parsing' });
  });

  it('a max_tokens of "2.0" is served on both dialects', async () => {
    expect((await post('/v1/completions', '{"model":"fake-model","prompt":"hi","max_tokens":"2.0"}')).statusCode).toBe(200);
    expect((await post('/generate', '{"prompt":"hi","max_tokens":"1_0"}')).statusCode).toBe(200);
  });
});

describe('vLLM’s type-less media parts (audit 7-R2)', () => {
  it('{"image_url": "<url>"} is served as an image part is; a type-less part with nothing is not', async () => {
    const chat = (part: unknown) => post('/v1/chat/completions', JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }, part] }], max_tokens: 2 }));
    expect((await chat({ image_url: 'https://example.com/a.png' })).statusCode).toBe(200);
    expect((await chat({ audio_url: 'https://example.com/a.wav' })).statusCode).toBe(200);
    expect((await chat({ note: 'x' })).statusCode).toBe(400);
  });
});

describe('vLLM’s plain bool fields refuse null (audit 7-R2)', () => {
  it.each(['echo', 'include_reasoning', 'skip_special_tokens', 'spaces_between_special_tokens', 'add_generation_prompt', 'ignore_eos', 'include_stop_str_in_output'])('chat %s: null is a 400 bool_type', async (key) => {
    const response = await post('/v1/chat/completions', JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, [key]: null }));
    expect(response.statusCode).toBe(400);
    expect(response.body).toContain('bool_type');
  });

  it('Optional bools take null: completions echo, stream, chat logprobs and parallel_tool_calls', async () => {
    expect((await post('/v1/completions', '{"model":"fake-model","prompt":"hi","max_tokens":2,"echo":null,"stream":null}')).statusCode).toBe(200);
    expect((await post('/v1/chat/completions', '{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"logprobs":null,"parallel_tool_calls":null}')).statusCode).toBe(200);
  });
});

describe('UTF-16 and UTF-32 bodies (audit 13-Z4-5)', () => {
  const json = '{"model":"fake-model","prompt":"h\u00e9 \ud83d\ude00","max_tokens":2}';
  const utf32 = (text: string, bigEndian: boolean): Buffer => {
    const points = [...text].map((c) => c.codePointAt(0) as number);
    const bytes = Buffer.alloc(points.length * 4);
    points.forEach((point, i) => (bigEndian ? bytes.writeUInt32BE(point, i * 4) : bytes.writeUInt32LE(point, i * 4)));
    return bytes;
  };
  const le16 = Buffer.from(json, 'utf16le');
  it.each([
    ['UTF-16-LE', le16],
    ['UTF-16-BE', Buffer.from(le16).swap16()],
    ['UTF-16 with its BOM', Buffer.concat([Buffer.from([0xff, 0xfe]), le16])],
    ['UTF-32-LE', utf32(json, false)],
    ['UTF-32-BE', utf32(json, true)],
    ['UTF-32 with its BOM', Buffer.concat([Buffer.from([0, 0, 0xfe, 0xff]), utf32(json, true)])],
  ])('%s is read as json.detect_encoding tells it, for vLLM and JetStream alike', async (_name, body) => {
    for (const url of ['/v1/completions', '/generate']) {
      const response = await server.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: body });
      expect(response.statusCode, url).toBe(200);
    }
  });

  it('bytes that decode in none of them are still the parse error', async () => {
    for (const body of [Buffer.from([0xff, 0xfe, 0x41]), Buffer.from([0x7b, 0, 0, 0, 0x22, 0, 0x11, 0x00])]) {
      const response = await server.app.inject({ method: 'POST', url: '/v1/completions', headers: { 'content-type': 'application/json' }, payload: body });
      expect(response.statusCode).toBe(400);
    }
  });
});
