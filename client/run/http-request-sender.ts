/** The default sender: one undici Agent per run, bodies from the API adapter, ids `bench-<seed>-<index>`. */
import { Agent, request } from 'undici';
import { sendAndMeasure, transportMessage } from '../send/http-sender.ts';
import { BenchError } from './bench-error.ts';
import type { RequestSender, SenderSetup } from './request-sender.ts';

/** Below uvicorn's `--timeout-keep-alive` default of 5 s (undici's own default). */
const IDLE_CONNECTION_MS = 4_000;
/** How long the unmeasured first request may take before the run starts anyway. */
const READY_WITHIN_MS = 10_000;
/** The largest model list read (a server that never ends its answer would fill the heap). */
const MODELS_BODY_LIMIT = 16 * 1024 * 1024;

/** A body's text, or null when it passes `limit` bytes (then the rest is not read). */
async function textWithin(body: AsyncIterable<Uint8Array> & { destroy(): unknown }, limit: number): Promise<string | null> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > limit) {
      body.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * JSON bodies, and no content coding: a request without Accept-Encoding lets a server or gateway
 * compress (RFC 9110 §12.5.3), which this client does not read. A header the user set, in any
 * letter case, wins.
 */
export function withDefaultHeaders(user: Readonly<Record<string, string>>): Record<string, string> {
  const given = new Set(Object.keys(user).map((name) => name.toLowerCase()));
  const defaults = Object.entries({ 'content-type': 'application/json', 'accept-encoding': 'identity' }).filter(([name]) => !given.has(name));
  return { ...Object.fromEntries(defaults), ...user };
}

/**
 * The base URL's path before the API's (a gateway's prefix is kept), without a trailing slash;
 * an OpenAI-style base that ends in `/v1` (the SDKs' `base_url`) is read without it when the
 * API's path starts with `/v1/`, rather than asking for `/v1/v1/completions`.
 */
export function basePath(base: URL, apiPath: string): string {
  const prefix = base.pathname.replace(/\/$/, '');
  return prefix.endsWith('/v1') && apiPath.startsWith('/v1/') ? prefix.slice(0, -3) : prefix;
}

/**
 * Where a server behind `base` exposes /metrics: beside its API, under a gateway's prefix when
 * the URL gives one (`http://gw/prefix` → `/prefix/metrics`), never under an OpenAI-style `/v1`.
 */
export function defaultMetricsUrl(base: URL): string {
  return onOrigin(base, `${basePath(base, '/v1/')}/metrics`).href;
}

/**
 * `path` on the base URL's own origin. Never `new URL(path, origin)`: a path that starts with
 * `//` (a base URL `http://host//v1`) is read there as another host (`http://v1/…`).
 */
function onOrigin(base: URL, path: string): URL {
  return new URL(`${base.origin}${path}`);
}

export function httpRequestSender({ base, api, clock, options }: SenderSetup): RequestSender {
  // No undici header/body timers: the run's one timeout sweep (local-run.ts) covers every
  // request, and a timer refreshed on each read is work on the read path.
  // An idle connection is dropped before uvicorn's 5 s keep-alive closes it (vLLM sends no
  // Keep-Alive hint): reusing one the server is closing fails a POST that undici cannot retry.
  const dispatcher = new Agent({ keepAliveTimeout: IDLE_CONNECTION_MS, connections: null, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
  const prefix = basePath(base, api.path);
  const path = `${prefix}${api.path}`;
  const headers = withDefaultHeaders(options.headers ?? {});
  const urlOf = (apiPath: string): URL => onOrigin(base, `${prefix}${apiPath}`);
  let readiness: Promise<void> | null = null;
  return {
    send(job, onInFlight) {
      return sendAndMeasure(
        dispatcher,
        clock,
        {
          origin: base.origin,
          path,
          body: api.body({ model: job.model, prompt: job.item.prompt, maxTokens: job.item.maxTokens, stream: options.stream, usage: options.usage, ignoreEos: options.ignoreEos ?? true }),
          headers: { ...headers, 'x-request-id': job.requestId },
        },
        { index: job.index, requestId: job.requestId, stage: job.stage, warmup: job.warmup, scheduledMs: job.scheduledMs, promptTokens: job.item.promptTokens },
        { api, stream: options.stream, tokenizerFallback: options.tokenizerFallback, timeoutMs: options.timeoutMs },
        onInFlight,
      );
    },
    async discoverModel(signal) {
      // Bounded as the first use is (the request timeout, 10 s at most), and Ctrl-C ends it.
      const withinMs = Math.min(READY_WITHIN_MS, options.timeoutMs);
      const within = AbortSignal.timeout(withinMs);
      let response;
      let text;
      // The URL really asked (a base URL with a path keeps it), named as such in every message.
      const modelsUrl = urlOf('/v1/models');
      try {
        response = await request(modelsUrl, { dispatcher, headers, signal: signal === undefined ? within : AbortSignal.any([within, signal]) });
        text = await textWithin(response.body, MODELS_BODY_LIMIT);
      } catch (error) {
        if (signal?.aborted === true) return null;
        if (within.aborted) {
          // A short request timeout bounds this wait too: say so, the server may be fine.
          const bound = withinMs < READY_WITHIN_MS ? ` (the request timeout, --timeout / load.timeout, bounds this wait)` : '';
          throw new BenchError(`no answer from ${modelsUrl.href} within ${withinMs / 1000} s${bound}; check --url (server.base_url), or pass --model`);
        }
        throw new BenchError(`cannot reach ${modelsUrl.href}: ${error instanceof Error ? transportMessage(error) : String(error)}; check --url (server.base_url), or pass --model`);
      }
      if (text === null) throw new BenchError(`${modelsUrl.href} answered more than ${MODELS_BODY_LIMIT / 1024 / 1024} MiB, which is no model list; check --url (server.base_url), or pass --model`);
      // That request was the transport's first use: the run needs no other before it starts,
      // once its connection is back in the pool (see firstUse).
      readiness ??= connectionReturned();
      if (response.statusCode !== 200) throw new BenchError(`${modelsUrl.href} answered ${response.statusCode}; ${discoveryHint(response.statusCode, headers)}`);
      // A coding the client did not ask for (it sends accept-encoding: identity), or no JSON:
      // said as such, not as an empty list.
      const coding = response.headers['content-encoding'];
      if (typeof coding === 'string' && coding.trim() !== '' && coding.trim().toLowerCase() !== 'identity') {
        throw new BenchError(`${modelsUrl.href} answered with content-encoding ${JSON.stringify(coding)}, which the client cannot read; pass --model`);
      }
      let listed: unknown;
      try {
        listed = JSON.parse(text);
      } catch {
        throw new BenchError(`${modelsUrl.href} answered no JSON (${JSON.stringify(text.slice(0, 60))}${text.length > 60 ? '…' : ''}); check --url (server.base_url), or pass --model`);
      }
      const id = (listed as { data?: Array<{ id?: unknown }> } | null)?.data?.[0]?.id;
      if (typeof id === 'string') return id;
      throw new BenchError(`${modelsUrl.href} lists no model; pass --model`);
    },
    ready(signal) {
      readiness ??= firstUse(dispatcher, api.readyPath === undefined ? null : urlOf(api.readyPath), headers, Math.min(READY_WITHIN_MS, options.timeoutMs), signal);
      return readiness;
    },
    close: () => dispatcher.close(),
  };
}

/**
 * What to do about a refused model discovery: a 401 or 403 is the server's API key (every
 * request would fail the same way with --model), anything else is answered by naming the model.
 */
function discoveryHint(status: number, headers: Readonly<Record<string, string>>): string {
  if (status !== 401 && status !== 403) return 'pass --model';
  const keyed = Object.keys(headers).some((name) => name.toLowerCase() === 'authorization');
  return keyed ? 'the server refused the API key: check --api-key (server.api_key)' : 'the server wants an API key: pass --api-key (server.api_key)';
}

/**
 * undici hands a connection back to its pool a turn after the response body ends: a request
 * sent before that opens a second connection, inside the first measured request's TTFT.
 */
function connectionReturned(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The transport's first use, unmeasured: one GET through the run's Agent opens a connection the
 * first measured request then takes, and pays undici's first-use work (its HTTP parser is
 * compiled on the first connection), which otherwise lands in that request's TTFT — 8–40 ms,
 * once 176 ms, on this machine. Whatever the answer, or none, the run goes on: its own requests
 * report what is wrong with the server.
 */
async function firstUse(dispatcher: Agent, url: URL | null, headers: Record<string, string>, withinMs: number, interrupt?: AbortSignal): Promise<void> {
  if (url === null) return;
  const within = AbortSignal.timeout(withinMs);
  try {
    const response = await request(url, { dispatcher, headers, signal: interrupt === undefined ? within : AbortSignal.any([within, interrupt]) });
    await response.body.dump();
    await connectionReturned();
  } catch {
    // Unreachable, refused or slow: the measured requests say so, each as its own record.
  }
}
