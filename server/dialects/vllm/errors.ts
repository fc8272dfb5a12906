/**
 * vLLM's error vocabulary. Client mistakes are answered in vLLM's shape with a 4xx, never a
 * 500. `VllmError` is the one error type of the vLLM dialect layer.
 */

export type VllmErrorType =
  | 'BadRequestError'
  | 'Bad Request'
  | 'NotFoundError'
  | 'InvalidUserInput'
  | 'Unauthorized'
  | 'RequestEntityTooLarge'
  | 'RateLimitError'
  | 'ServiceUnavailableError'
  | 'InternalServerError'
  // llm-d-inference-sim's names for other statuses (its ErrorCodeToType, after the openai package's).
  | 'AuthenticationError'
  | 'PermissionDeniedError'
  | 'UnprocessableEntityError'
  | 'APIConnectionError';

export class VllmError extends Error {
  readonly status: number;
  readonly type: VllmErrorType;
  readonly param: string | null;
  /** Extra response headers (Retry-After on a 429). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, type: VllmErrorType, message: string, param: string | null = null, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'VllmError';
    this.status = status;
    this.type = type;
    this.param = param;
    this.headers = headers;
  }

  /** The body vLLM sends: compact JSON `{"error": {message, type, param, code}}`. */
  body(): string {
    return JSON.stringify({ error: { message: this.message, type: this.type, param: this.param, code: this.status } });
  }
}

export const badRequest = (message: string, param: string | null = null): VllmError =>
  new VllmError(400, 'BadRequestError', message, param);

/** An error raised while vLLM 0.10/0.11 renders a chat's messages: answered as `f"{e} {e.__cause__}"`. */
export const preprocessingError = (message: string): VllmError => badRequest(`${message} None`);

/**
 * The engine's refusal of a request whose id is already running (V1 OutputProcessor.add_request):
 * `engineId` is the id vLLM gives it, `cmpl-<id>-<prompt>` or `chatcmpl-<id>`, and with n > 1
 * the first choice's `0_<that>`.
 */
export const alreadyRunning = (engineId: string, n: number): VllmError => badRequest(`Request id ${n > 1 ? `0_${engineId}` : engineId} already running.`);

/** vLLM 0.11's `_check_model` answer (param stays null in that release). */
export const modelNotFound = (model: string): VllmError =>
  new VllmError(404, 'NotFoundError', `The model \`${model}\` does not exist.`);

/** vLLM 0.10/0.11 `_validate_input`: a prompt must leave room for at least one output token. */
export function promptTooLong(maxModelLen: number, promptTokens: number): VllmError {
  return badRequest(
    `This model's maximum context length is ${maxModelLen} tokens. However, your request has ${promptTokens} input tokens. ` +
      'Please reduce the length of the input messages.',
  );
}

/** vLLM 0.10/0.11 `_validate_input`: prompt + requested output must fit --max-model-len. */
export function maxTokensTooLarge(maxModelLen: number, promptTokens: number, maxTokens: number): VllmError {
  return badRequest(
    `'max_tokens' or 'max_completion_tokens' is too large: ${maxTokens}. This model's maximum context length is ${maxModelLen} tokens ` +
      `and your request has ${promptTokens} input tokens (${maxTokens} > ${maxModelLen} - ${promptTokens}).`,
  );
}

/**
 * vLLM 0.11's completion renderer: the prompt may use max_model_len − max_tokens tokens, and the
 * message calls that number the context length (a known quirk, reproduced as is).
 */
export function renderedPromptTooLong(maxModelLen: number, promptTokens: number, maxTokens: number | null): VllmError | null {
  const maxLength = maxModelLen - (maxTokens ?? 0);
  if (promptTokens <= maxLength) return null;
  return badRequest(
    `This model's maximum context length is ${maxLength} tokens. However, your request has ${promptTokens} input tokens. ` +
      'Please reduce the length of the input messages.',
  );
}

/** Both checks of `_validate_input` in vLLM's order; null when the request fits. */
export function contextLengthError(maxModelLen: number, promptTokens: number, maxTokens: number): VllmError | null {
  if (promptTokens >= maxModelLen) return promptTooLong(maxModelLen, promptTokens);
  if (promptTokens + maxTokens > maxModelLen) return maxTokensTooLarge(maxModelLen, promptTokens, maxTokens);
  return null;
}

/**
 * A request the engine's full waiting queue turns away. vLLM has no such queue; llm-d-inference-sim,
 * whose flag this is, answers it with the openai clients' name for a 429, `RateLimitError`. A full
 * queue drains within a step or two: clients are told to come back in a second.
 */
export const rateLimited = (message: string): VllmError => new VllmError(429, 'RateLimitError', message, null, { 'retry-after': '1' });

/** llm-d-inference-sim's error types of the statuses its `ErrorCodeToType` names. */
const LLMD_ERROR_TYPES: Readonly<Record<number, VllmErrorType>> = { 400: 'BadRequestError', 401: 'AuthenticationError', 403: 'PermissionDeniedError', 404: 'NotFoundError', 422: 'UnprocessableEntityError', 429: 'RateLimitError' };

/** llm-d-inference-sim's error type of an HTTP status (its `ErrorCodeToType`). */
function llmdErrorType(status: number): VllmErrorType {
  return LLMD_ERROR_TYPES[status] ?? (status >= 500 ? 'InternalServerError' : 'APIConnectionError');
}

/**
 * llm-d-inference-sim's `X-Return-Error: CODE` (v0.9+): the request is answered at once with that
 * status and its error body, whatever it asked; a value that is no integer is a 400. Null
 * without the header. Statuses outside 400–599 are refused too (llm-d would send them as they
 * are, an error body under a 200 or a 1xx no client can read).
 */
export function returnErrorHeader(value: string | undefined): VllmError | null {
  if (value === undefined || value === '') return null;
  const quoted = JSON.stringify(value);
  if (!/^[+-]?\d+$/.test(value)) return badRequest(`Invalid X-Return-Error header value ${quoted}: must be an integer`);
  const status = Number(value);
  if (!(status >= 400 && status <= 599)) return badRequest(`Invalid X-Return-Error header value ${quoted}: benchtruth simulates the error statuses 400 to 599`);
  return new VllmError(status, llmdErrorType(status), `Simulated error triggered by X-Return-Error header (code ${status})`);
}
