/**
 * Validation of a `/v1/chat/completions` body with vLLM's rules: messages whose content is a
 * string, null, or an array of content parts (text parts are joined with "\n", as vLLM's
 * string content format does); `max_completion_tokens` wins over the deprecated `max_tokens`.
 */
import { bodyNotObject, FieldReader, isPlainObject, type FieldIssue, type Parsed } from './request-fields.ts';
import { beamSearchLimit, chatBeforeValidators, readChatTemplateFields, readSamplingFields, streamOptionsWithoutStream, typeErrors, type SamplingFields } from './sampling-request.ts';

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
}

/** chat_utils.py's type-less parts: `{"image_url": "<url>"}` and the like (no text for this model). */
const SIMPLE_MEDIA_FIELDS = ['image_url', 'audio_url', 'input_audio', 'video_url'] as const;

function readContent(raw: unknown, at: number, issues: FieldIssue[]): string {
  if (raw === undefined || raw === null) return '';
  if (typeof raw === 'string') return raw;
  if (!Array.isArray(raw)) {
    issues.push({ type: 'string_type', loc: ['messages', at, 'content', 'str'], msg: 'Input should be a valid string', input: raw });
    return '';
  }
  const texts: string[] = [];
  raw.forEach((part, p) => {
    if (typeof part === 'string') {
      texts.push(part);
      return;
    }
    // vLLM's simple multimodal parts name their modality by their one field, with no `type`.
    if (isPlainObject(part) && part.type === undefined && SIMPLE_MEDIA_FIELDS.some((field) => part[field] !== undefined)) return;
    if (!isPlainObject(part) || typeof part.type !== 'string') {
      issues.push({ type: 'model_type', loc: ['messages', at, 'content', p], msg: 'Input should be a valid dictionary with a string `type`', input: part });
      return;
    }
    if (part.type === 'text') {
      if (typeof part.text === 'string') texts.push(part.text);
      else issues.push({ type: 'string_type', loc: ['messages', at, 'content', p, 'text'], msg: 'Input should be a valid string', input: part.text ?? null });
    }
    // Non-text parts (images, audio, files) carry no text for a text-only fake model.
  });
  return texts.join('\n');
}

function readMessages(body: Record<string, unknown>, issues: FieldIssue[]): ChatMessage[] {
  const raw = body.messages;
  if (raw === undefined) {
    issues.push({ type: 'missing', loc: ['messages'], msg: 'Field required', input: body });
    return [];
  }
  if (!Array.isArray(raw)) {
    issues.push({ type: 'list_type', loc: ['messages'], msg: 'Input should be a valid list', input: raw });
    return [];
  }
  const messages: ChatMessage[] = [];
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
    messages.push({ role: message.role, text: readContent(message.content, at, issues) });
  });
  return messages;
}

/** `documents: Optional[list[dict[str, str]]]` (RAG context for the chat template). */
function readDocuments(reader: FieldReader): void {
  reader.objects('documents', { type: 'dict_type', msg: 'Input should be a valid dictionary' }, (document, i) => {
    for (const [key, value] of Object.entries(document)) {
      if (typeof value !== 'string') reader.issues.push({ type: 'string_type', loc: ['documents', i, key], msg: 'Input should be a valid string', input: value });
    }
  });
}

export function parseChatRequest(body: unknown): Parsed<ChatRequest> {
  if (!isPlainObject(body)) {
    return { ok: false, error: bodyNotObject(body) };
  }
  const early = chatBeforeValidators(body) ?? streamOptionsWithoutStream(body);
  if (early !== null) return early;
  const reader = new FieldReader(body);
  const messages = readMessages(body, reader.issues);
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
  const role = addGenerationPrompt ? 'assistant' : (messages[messages.length - 1]?.role ?? 'assistant');
  return { ok: true, value: { ...fields, messages, maxTokens, role, logprobs: wantLogprobs ? topLogprobs : null } };
}

/** Chat's `request_id` field when it is a string (vLLM 0.11 names the request after it). */
export function bodyRequestId(body: unknown): string | undefined {
  return isPlainObject(body) && typeof body.request_id === 'string' ? body.request_id : undefined;
}

/** The text echo mode hands back: the last message's text. */
export function lastMessageText(messages: readonly ChatMessage[]): string {
  return messages[messages.length - 1]?.text ?? '';
}
