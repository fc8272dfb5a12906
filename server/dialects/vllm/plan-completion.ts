/**
 * The whole planned response of one `/v1/completions` request, as a pure function: tokens and
 * their due times, events, body bytes and writes. The route plays it; tests compose it in
 * memory with a virtual clock.
 */
import { hashString } from '../../../contracts/rng.ts';
import type { GeneratedToken } from '../../engine/text.ts';
import type { ServerOptions } from '../../options.ts';
import type { WirePolicy } from '../../wire/wire-policy.ts';
import type { CompletionRequest } from './completion-request.ts';
import { completionBody, completionChunkEvents, type CompletionContext } from './completions.ts';
import type { VllmVersion } from './dialect-version.ts';
import { planChoices } from './plan-choices.ts';
import { planVllmResponse, type PlannedCompletion } from './planned-response.ts';
import { COMPLETIONS_PATH } from './generation-paths.ts';

export type { PlannedCompletion } from './planned-response.ts';

export interface CompletionPlanInput {
  options: Pick<ServerOptions, 'seed' | 'model' | 'ttftMs' | 'itlMs' | 'multibyteRate'> & { vllmVersion?: VllmVersion };
  request: CompletionRequest;
  /** The `model` the response names (a LoRA adapter's name); default options.model. */
  servedModel?: string;
  /** Prompt tokens of each prompt of a batch (default: one prompt of promptTokens). */
  promptTokensOfPrompt?: readonly number[];
  /** `echo: true`: each prompt's text, put in front of its choices' text (first chunk). */
  echoPrompts?: readonly string[];
  /** Each prompt's token ids: for `return_token_ids`, and for a streamed `echo` (see CompletionContext). */
  promptTokenIdsOfPrompt?: ReadonlyArray<readonly number[]>;
  /** Echo mode: each prompt's tokens, given back as the output. */
  echoes?: ReadonlyArray<readonly GeneratedToken[]>;
  /** request.maxTokens stands for the model's EOS (the request set no limit). */
  naturalStop?: boolean;
  /** The request set no `max_tokens` (request.maxTokens is the EOS point or the context left). */
  unlimited?: boolean;
  requestId: string;
  requestKey: string;
  promptTokens: number;
  created: number;
  arrivalEpochMs: number;
  /** How the response is framed, cut and broken (server/wire/); default vLLM's own. */
  wire?: Readonly<WirePolicy>;
}

export function planCompletion(input: CompletionPlanInput): PlannedCompletion {
  const { options, request } = input;
  const n = request.n ?? 1;
  const promptCounts = input.promptTokensOfPrompt ?? [input.promptTokens];
  const { choices, rng } = planChoices({
    options,
    requestKey: input.requestKey,
    echoes: input.echoes ?? promptCounts.map(() => null),
    n,
    maxTokens: request.maxTokens,
    naturalStop: input.naturalStop ?? false,
    stop: { stop: request.stop ?? [], includeStopStrInOutput: request.includeStopStrInOutput ?? false, minTokens: request.sampling?.minTokens ?? 0 },
    promptTokens: input.promptTokens,
  });
  if (input.echoPrompts !== undefined) {
    for (const choice of choices) {
      const prompt = input.echoPrompts[Math.floor(choice.index / n)] ?? '';
      choice.deltas[0] = prompt + (choice.deltas[0] ?? '');
      choice.text = prompt + choice.text;
    }
  }
  const model = input.servedModel ?? options.model;
  const completion: CompletionContext = {
    id: `cmpl-${input.requestId}`,
    created: input.created,
    model,
    promptTokens: input.promptTokens,
    finishReason: choices[0]?.finishReason ?? 'length',
    streamOptions: request.streamOptions,
    version: options.vllmVersion,
    promptTokensOfChoice: choices.map((c) => promptCounts[Math.floor(c.index / n)] ?? input.promptTokens),
    ...(request.logprobs === undefined || request.logprobs === null ? {} : { logprobs: { top: request.logprobs, salt: hashString(input.requestKey), asTokenIds: request.sampling?.tokensAsIds === true } }),
    ...(request.returnTokenIds === true ? { returnTokenIds: true } : {}),
    ...(input.promptTokenIdsOfPrompt === undefined ? {} : { promptTokenIdsOfChoice: choices.map((c) => input.promptTokenIdsOfPrompt?.[Math.floor(c.index / n)] ?? []) }),
    ...(input.echoPrompts === undefined ? {} : { echoedCharsOfChoice: choices.map((c) => [...(input.echoPrompts?.[Math.floor(c.index / n)] ?? '')].length) }),
  };
  return planVllmResponse({
    choices,
    rng,
    stream: request.stream,
    ...(request.oneEventStream === true ? { oneEventStream: true } : {}),
    wire: input.wire,
    body: () => completionBody(completion, choices),
    chunks: (steps, completionTokens) => completionChunkEvents(completion, steps, completionTokens),
    ...(completion.promptTokensOfChoice === undefined ? {} : { promptTokensOfChoice: completion.promptTokensOfChoice }),
    sampling: { n, maxTokens: input.unlimited === true ? null : request.maxTokens },
    facts: {
      requestId: input.requestId,
      endpoint: COMPLETIONS_PATH,
      model,
      arrivalEpochMs: input.arrivalEpochMs,
      promptTokens: input.promptTokens,
      finishReason: completion.finishReason,
    },
  });
}
