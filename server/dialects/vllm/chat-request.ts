/**
 * Validation of a `/v1/chat/completions` body with vLLM's rules: messages whose content is a
 * string, null, or an array of content parts (text parts are joined with "\n", as vLLM's
 * string content format does); `max_completion_tokens` wins over the deprecated `max_tokens`.
 */
import { preprocessingError, type VllmError } from './errors.ts';
import { pythonRepr } from './python-repr.ts';
import { bodyNotObject, FieldReader, isPlainObject, type FieldIssue, type Parsed } from './request-fields.ts';
import { DEFAULT_VLLM_VERSION, type VllmVersion } from './dialect-version.ts';
import { beamSearchLimit, chatBeforeValidators, chatTemplateError, readChatTemplateFields, readSamplingFields, typeErrors, type SamplingFields } from './sampling-request.ts';

const REASONING_EFFORTS = ['low', 'medium', 'high'] as const;

export interface ChatMessage {
  role: string;
  /** The message's text (text parts joined); '' for a message without text. */
  text: string;
}

export interface ChatRequest extends SamplingFields {
  messages: ChatMessage[];
  /** Output token limit per choice; null when the request sets none. */
  maxTokens: number | null;
  /** The role of the answer: the assistant (default), or with add_generation_prompt=false the last message's. */
  role?: string;
  /** `logprobs: true` → `top_logprobs` alternatives per position; null when logprobs are off. */
  logprobs?: number | null;
  /**
   * The 400 vLLM raises while rendering the messages (a malformed content part, the template
   * refusing continue_final_message), or null. Rendering comes after the model and tool-choice
   * checks, so the route answers it there.
   */
  renderError?: VllmError | null;
}

/** chat_utils.py's type-less parts: `{"image_url": "<url>"}` and the like (no text for this model). */
const SIMPLE_MEDIA_FIELDS = ['image_url', 'image_pil', 'image_embeds', 'audio_embeds', 'audio_url', 'video_url', 'tool_reference'] as const;

/** Typed parts whose field is text for the prompt (text, refusal and thinking are all joined in). */
const TEXT_FIELDS: Readonly<Record<string, string>> = { text: 'text', input_text: 'text', output_text: 'text', refusal: 'refusal', thinking: 'thinking', tool_reference: 'name' };

/**
 * Media parts chat_utils.py validates with a TypeAdapter before use (the rest it only casts):
 * the part's required field, an object with a required `url`.
 */
const VALIDATED_MEDIA: Readonly<Record<string, { model: string; field: string }>> = {
  image_url: { model: 'ChatCompletionContentPartImageParam', field: 'image_url' },
  audio_url: { model: 'ChatCompletionContentPartAudioParam', field: 'audio_url' },
  video_url: { model: 'ChatCompletionContentPartVideoParam', field: 'video_url' },
};
const CAST_MEDIA = new Set(['input_image', 'image_embeds', 'audio_embeds', 'image_pil', 'input_audio']);

/** The Python type name of a JSON value. */
function pythonTypeName(value: unknown): string {
  if (value === null) return 'NoneType';
  if (Array.isArray(value)) return 'list';
  if (typeof value === 'object') return 'dict';
  if (typeof value === 'string') return 'str';
  if (typeof value === 'boolean') return 'bool';
  return Number.isInteger(value) ? 'int' : 'float';
}

/** A TypeAdapter's ValidationError as vLLM's 400 quotes it (`str(e)`, pydantic 2.11's). */
function partValidationError(model: string, loc: string, type: string, msg: string, input: unknown): VllmError {
  return preprocessingError(
    `1 validation error for ${model}\n${loc}\n  ${msg} [type=${type}, input_value=${pythonRepr(input)}, input_type=${pythonTypeName(input)}]\n    For further information visit https://errors.pydantic.dev/2.11/v/${type}`,
  );
}

/**
 * What vLLM's chat_utils.py makes of a content part its request model let through (the model
 * admits any dict: several of its part types have no required field): the part's text; null for
 * a media part (this model reads none) or a skipped one (text-like with no text); or the 400 its
 * parsing raises (an unknown or missing `type`, a media part without its URL object).
 */
function readPart(part: Record<string, unknown>, textsBefore: number): string | null | VllmError {
  const type = part.type;
  if (type === undefined || type === null) {
    if (SIMPLE_MEDIA_FIELDS.some((field) => field in part) || (part.input_audio !== undefined && part.input_audio !== null)) return null;
    return preprocessingError("Missing 'type' field in multimodal part.");
  }
  if (typeof type !== 'string') return preprocessingError("Invalid 'type' field in multimodal part.");
  const textField = TEXT_FIELDS[type];
  if (textField !== undefined) {
    const text = part[textField];
    if (text === undefined || text === null) return null;
    // Joined into the prompt with "\n".join, which refuses anything but a str.
    return typeof text === 'string' ? text : preprocessingError(`sequence item ${textsBefore}: expected str instance, ${pythonTypeName(text)} found`);
  }
  const media = VALIDATED_MEDIA[type];
  if (media !== undefined) {
    const value = part[media.field];
    if (value === undefined) return partValidationError(media.model, media.field, 'missing', 'Field required', part);
    if (!isPlainObject(value)) return partValidationError(media.model, media.field, 'dict_type', 'Input should be a valid dictionary', value);
    if (value.url === undefined) return partValidationError(media.model, `${media.field}.url`, 'missing', 'Field required', value);
    if (typeof value.url !== 'string') return partValidationError(media.model, `${media.field}.url`, 'string_type', 'Input should be a valid string', value.url);
    return null;
  }
  if (CAST_MEDIA.has(type)) return null;
  return preprocessingError(`Unknown part type: ${type}`);
}

/** A message's content: its text, with the first content-part error vLLM's parsing would raise (or null). */
function readContent(raw: unknown, at: number, issues: FieldIssue[]): { text: string; partError: VllmError | null } {
  if (raw === undefined || raw === null) return { text: '', partError: null };
  if (typeof raw === 'string') return { text: raw, partError: null };
  if (!Array.isArray(raw)) {
    issues.push({ type: 'string_type', loc: ['messages', at, 'content', 'str'], msg: 'Input should be a valid string', input: raw });
    return { text: '', partError: null };
  }
  const texts: string[] = [];
  let partError: VllmError | null = null;
  raw.forEach((part, p) => {
    // `if parse_res:` in chat_utils.py: an empty text adds nothing, not even its newline.
    if (typeof part === 'string') {
      if (part !== '') texts.push(part);
      return;
    }
    if (!isPlainObject(part)) {
      issues.push({ type: 'model_type', loc: ['messages', at, 'content', p], msg: 'Input should be a valid dictionary', input: part });
      return;
    }
    const read = readPart(part, texts.length);
    if (typeof read === 'string') {
      if (read !== '') texts.push(read);
    }
    else if (read !== null) partError ??= read;
  });
  return { text: texts.join('\n'), partError };
}

/** The messages, with the first content-part error vLLM's parsing of them would raise (or null). */
function readMessages(body: Record<string, unknown>, issues: FieldIssue[]): { messages: ChatMessage[]; partError: VllmError | null } {
  const raw = body.messages;
  if (raw === undefined) {
    issues.push({ type: 'missing', loc: ['messages'], msg: 'Field required', input: body });
    return { messages: [], partError: null };
  }
  if (!Array.isArray(raw)) {
    issues.push({ type: 'list_type', loc: ['messages'], msg: 'Input should be a valid list', input: raw });
    return { messages: [], partError: null };
  }
  const messages: ChatMessage[] = [];
  let partError: VllmError | null = null;
  raw.forEach((message, at) => {
    if (!isPlainObject(message)) {
      issues.push({ type: 'model_type', loc: ['messages', at], msg: 'Input should be a valid dictionary', input: message });
      return;
    }
    if (typeof message.role !== 'string') {
      issues.push(message.role === undefined
        ? { type: 'missing', loc: ['messages', at, 'role'], msg: 'Field required', input: message }
        : { type: 'string_type', loc: ['messages', at, 'role'], msg: 'Input should be a valid string', input: message.role });
      return;
    }
    // Only an assistant's or a function's content may be null (openai's message TypedDicts; the
    // others, vLLM's custom message too, take a text or parts, or no content key at all), and a
    // name is always a text: anything else fails every member of the messages union.
    // (A function message's null content comes with its required name.)
    const nullAllowed = message.role === 'assistant' || (message.role === 'function' && typeof message.name === 'string');
    if (message.content === null && !nullAllowed) {
      issues.push({ type: 'string_type', loc: ['messages', at, 'content', 'str'], msg: 'Input should be a valid string', input: null });
      return;
    }
    if (message.name !== undefined && typeof message.name !== 'string') {
      issues.push({ type: 'string_type', loc: ['messages', at, 'name'], msg: 'Input should be a valid string', input: message.name });
      return;
    }
    const content = readContent(message.content, at, issues);
    partError ??= content.partError;
    messages.push({ role: message.role, text: content.text });
  });
  return { messages, partError };
}

/** `documents: Optional[list[dict[str, str]]]` (RAG context for the chat template). */
function readDocuments(reader: FieldReader): void {
  reader.objects('documents', { type: 'dict_type', msg: 'Input should be a valid dictionary' }, (document, i) => {
    for (const [key, value] of Object.entries(document)) {
      if (typeof value !== 'string') reader.issues.push({ type: 'string_type', loc: ['documents', i, key], msg: 'Input should be a valid string', input: value });
    }
  });
}

export function parseChatRequest(body: unknown, version: VllmVersion = DEFAULT_VLLM_VERSION): Parsed<ChatRequest> {
  if (!isPlainObject(body)) {
    return { ok: false, error: bodyNotObject(body) };
  }
  const early = chatBeforeValidators(body, version);
  if (early !== null) return early;
  const reader = new FieldReader(body);
  const { messages, partError } = readMessages(body, reader.issues);
  const fields = readSamplingFields(reader, true);
  reader.strNotNull('request_id');
  // Chat's own typed fields the fake model does not use: a wrong type is still vLLM's 400.
  // Plain `bool` in vLLM's ChatCompletionRequest (null is refused), but parallel_tool_calls is Optional.
  for (const key of ['echo', 'include_reasoning', 'continue_final_message', 'add_special_tokens']) reader.boolNotNull(key, false);
  reader.bool('parallel_tool_calls', false);
  reader.literal('reasoning_effort', REASONING_EFFORTS);
  readChatTemplateFields(reader);
  reader.str('structural_tag');
  readDocuments(reader);
  // Chat's own (CompletionRequest declares none: there it is an ignored extra).
  reader.strList('bad_words', false);
  const maxTokensField = reader.int('max_tokens', null);
  const maxCompletionTokens = reader.int('max_completion_tokens', null);
  const typeFailure = typeErrors(reader);
  if (typeFailure !== null) return typeFailure;
  // vLLM: `request.max_completion_tokens or request.max_tokens` (a 0 falls through, as in Python).
  const maxTokens = beamSearchLimit(fields, maxCompletionTokens !== null && maxCompletionTokens !== 0 ? maxCompletionTokens : maxTokensField);
  const addGenerationPrompt = reader.boolNotNull('add_generation_prompt', true);
  const wantLogprobs = reader.bool('logprobs', false);
  const topLogprobs = reader.int('top_logprobs', 0);
  const typeFailure2 = typeErrors(reader);
  if (typeFailure2 !== null) return typeFailure2;
  // Raised while the messages are rendered: the first part error, else the template's.
  const renderError = partError ?? chatTemplateError(reader.boolNotNull('continue_final_message', false), addGenerationPrompt);
  const role = addGenerationPrompt ? 'assistant' : (messages[messages.length - 1]?.role ?? 'assistant');
  // serving_chat builds logprobs only `if request.logprobs and request.top_logprobs is not None`:
  // an explicit `top_logprobs: null` turns them off (its default is 0, not None).
  const logprobs = wantLogprobs && reader.body.top_logprobs !== null ? topLogprobs : null;
  return { ok: true, value: { ...fields, messages, maxTokens, role, logprobs, renderError } };
}

/** The text echo mode hands back: the last message's text. */
export function lastMessageText(messages: readonly ChatMessage[]): string {
  return messages[messages.length - 1]?.text ?? '';
}
