/**
 * The whole planned response of one `/v1/chat/completions` request, as a pure function, in the
 * same stages as plan-completion.ts: engine tokens per choice → chat events → wire frame and
 * writes → truth record. The route plays it.
 */
import { hashString } from '../../../contracts/rng.ts';
import type { GeneratedToken } from '../../engine/text.ts';
import type { ServerOptions } from '../../options.ts';
import type { WirePolicy } from '../../wire/wire-policy.ts';
import { chatBody, chatChunkEvents, type ChatContext } from './chat.ts';
import type { ChatRequest } from './chat-request.ts';
import type { VllmVersion } from './dialect-version.ts';
import { planVllmResponse, type PlannedCompletion } from './planned-response.ts';
import { planChoices } from './plan-choices.ts';
import { CHAT_COMPLETIONS_PATH } from './generation-paths.ts';

export interface ChatPlanInput {
  options: Pick<ServerOptions, 'seed' | 'model' | 'ttftMs' | 'itlMs' | 'multibyteRate'> & { vllmVersion?: VllmVersion };
  request: ChatRequest;
  /** Resolved output limit per choice (the request's, or the EOS point when it set none). */
  maxTokens: number;
  /** maxTokens stands for the model's EOS (the request set no limit). */
  naturalStop: boolean;
  requestId: string;
  requestKey: string;
  promptTokens: number;
  created: number;
  arrivalEpochMs: number;
  /** The `model` the response names (a LoRA adapter's name); default options.model. */
  servedModel?: string;
  /** `return_token_ids`: the prompt's token ids. */
  promptTokenIds?: readonly number[];
  /** Echo mode: the last message's tokens, given back as the output. */
  echo?: readonly GeneratedToken[];
  wire?: Readonly<WirePolicy>;
}

export function planChat(input: ChatPlanInput): PlannedCompletion {
  const { options, request } = input;
  const { choices, rng } = planChoices({
    options,
    requestKey: input.requestKey,
    echoes: [input.echo ?? null],
    n: request.n,
    maxTokens: input.maxTokens,
    naturalStop: input.naturalStop,
    stop: { stop: request.stop, includeStopStrInOutput: request.includeStopStrInOutput, minTokens: request.sampling?.minTokens ?? 0 },
    promptTokens: input.promptTokens,
  });
  const model = input.servedModel ?? options.model;
  const chat: ChatContext = {
    id: `chatcmpl-${input.requestId}`,
    created: input.created,
    model,
    promptTokens: input.promptTokens,
    streamOptions: request.streamOptions,
    version: options.vllmVersion,
    ...(request.role === undefined ? {} : { role: request.role }),
    ...(input.promptTokenIds === undefined ? {} : { promptTokenIds: input.promptTokenIds }),
    ...(request.logprobs === undefined || request.logprobs === null ? {} : { logprobs: { top: request.logprobs, salt: hashString(input.requestKey), asTokenIds: request.sampling?.tokensAsIds === true } }),
  };
  return planVllmResponse({
    choices,
    rng,
    stream: request.stream,
    wire: input.wire,
    body: () => chatBody(chat, choices),
    chunks: (steps, completionTokens) => chatChunkEvents(chat, choices.length, steps, completionTokens),
    sampling: { n: request.n, maxTokens: request.maxTokens },
    facts: {
      requestId: input.requestId,
      endpoint: CHAT_COMPLETIONS_PATH,
      model,
      arrivalEpochMs: input.arrivalEpochMs,
      promptTokens: input.promptTokens,
      finishReason: choices[0]?.finishReason ?? null,
    },
  });
}
