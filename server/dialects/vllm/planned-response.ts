/**
 * The last step every vLLM endpoint shares: a wire-planned response becomes the request's
 * truth record and the headers vLLM (uvicorn) would send with it.
 */
import type { PlannedToken, TruthRecord } from '../../../contracts/truth.ts';
import type { WireResponse } from '../../wire/plan-wire-response.ts';

export interface PlannedCompletion {
  record: TruthRecord;
  headers: Record<string, string | number>;
}

export interface ResponseFacts {
  requestId: string;
  endpoint: string;
  model: string;
  stream: boolean;
  arrivalEpochMs: number;
  promptTokens: number;
  finishReason: string | null;
  tokens: PlannedToken[];
}

export function plannedResponse(framed: WireResponse, facts: ResponseFacts): PlannedCompletion {
  const record: TruthRecord = {
    id: facts.requestId,
    dialect: 'vllm',
    endpoint: facts.endpoint,
    model: facts.model,
    stream: facts.stream,
    arrivalEpochMs: facts.arrivalEpochMs,
    status: framed.status,
    headersMs: null,
    headersDueMs: framed.headersDueMs,
    wire: framed.wire,
    promptTokens: facts.promptTokens,
    finishReason: facts.finishReason,
    tokens: facts.tokens,
    events: framed.events,
    writes: framed.writes,
    fault: framed.fault,
    body: framed.body,
    end: null,
  };
  const common = { 'x-request-id': facts.requestId, server: 'uvicorn' };
  const headers: Record<string, string | number> =
    framed.errorHeaders !== null
      ? { ...framed.errorHeaders, 'content-length': framed.body.byteLength, ...common }
      : facts.stream
        ? { 'content-type': 'text/event-stream; charset=utf-8', ...common }
        : { 'content-type': 'application/json', 'content-length': framed.body.byteLength, ...common };
  return { record, headers };
}
