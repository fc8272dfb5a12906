/** Helpers for tests that read JetStream's back-to-back JSON bodies through fastify's inject. */
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { JsonObjectDecoder } from '../../client/decode/json-object-decoder.ts';

/** POSTs `body` (JSON-encoded unless already a string) as application/json. */
export function postJson(app: FastifyInstance, url: string, body: unknown, headers: Record<string, string> = {}) {
  return app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: typeof body === 'string' ? body : JSON.stringify(body) });
}

/** The texts of the JSON objects of a body, which must hold nothing else. */
export function jsonObjectsOf(body: string): string[] {
  const out: string[] = [];
  const decoder = new JsonObjectDecoder({ onObject: (o) => out.push(o.text) });
  decoder.feed(Buffer.from(body), 0);
  expect(decoder.end()).toEqual({ pendingBytes: 0, strayBytes: 0 });
  return out;
}
