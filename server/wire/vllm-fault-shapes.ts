/**
 * vLLM's spelling of the wire faults. Before the stream: the error JSON of its HTTP errors
 * (compact, status = code). After the 200: `data: {"error": {...}}` as Python's json.dumps
 * writes it (", " and ": " separators), then `[DONE]`.
 */
import { pythonJsonDumpsFlat } from '../dialects/python-json-dumps.ts';
import type { DialectShapes } from './plan-wire-response.ts';

const ERRORS: Record<number, { type: string; message: string }> = {
  400: { type: 'BadRequestError', message: 'The request was rejected by the server (benchtruth wire fault).' },
  404: { type: 'NotFoundError', message: 'Not found (benchtruth wire fault).' },
  429: { type: 'RateLimitError', message: 'Too many requests: the server is at capacity, retry later (benchtruth wire fault).' },
  500: { type: 'InternalServerError', message: 'Internal server error (benchtruth wire fault).' },
  503: { type: 'ServiceUnavailableError', message: 'The server is overloaded or not ready yet (benchtruth wire fault).' },
};

function errorOf(status: number): { type: string; message: string } {
  return ERRORS[status] ?? { type: status < 500 ? 'BadRequestError' : 'InternalServerError', message: `HTTP ${status} (benchtruth wire fault).` };
}

/** The data of vLLM's in-stream error event: `{"error": {...}}` in Python's json.dumps spacing. */
export function vllmStreamErrorData(message: string, type: string, code: number): string {
  return `{"error": ${pythonJsonDumpsFlat({ message, type, param: null, code })}}`;
}

export const VLLM_FAULT_SHAPES: DialectShapes = Object.freeze({
  httpErrorBody(status: number): string {
    const { type, message } = errorOf(status);
    return JSON.stringify({ error: { message, type, param: null, code: status } });
  },
  streamErrorData(status: number): string {
    const { type, message } = errorOf(status);
    return vllmStreamErrorData(message, type, status);
  },
});
