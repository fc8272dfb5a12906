/**
 * vLLM's `POST /tokenize` (a prompt, or chat messages) and `POST /detokenize`, with the server's
 * tokenizer, and `GET /version`. Outside /v1, so --api-key does not guard them (as in vLLM).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { parseChatRequest } from '../dialects/vllm/chat-request.ts';
import { VLLM_RELEASE } from '../dialects/vllm/dialect-version.ts';
import { badRequest, VllmError } from '../dialects/vllm/errors.ts';
import { bodyNotObject, FieldReader, isPlainObject, laxBool, validationError, type FieldIssue } from '../dialects/vllm/request-fields.ts';
import { chatTemplateError, generationPromptConflict, readChatTemplateFields } from '../dialects/vllm/sampling-request.ts';
import type { ServerContext } from '../server-context.ts';
import { fail, resolveModel } from './vllm-generation.ts';
import type { VllmState } from './vllm-state.ts';
import { JSON_BODY_ROUTE } from '../dialects/python-json.ts';

const json = (reply: FastifyReply, body: unknown): FastifyReply => reply.headers({ 'content-type': 'application/json', server: 'uvicorn' }).send(Buffer.from(JSON.stringify(body)));

function modelOf(body: Record<string, unknown>, issues: FieldIssue[]): string {
  const model = body.model;
  if (model === undefined || model === null) return '';
  if (typeof model === 'string') return model;
  issues.push({ type: 'string_type', loc: ['model'], msg: 'Input should be a valid string', input: model });
  return '';
}

export function vllmTokenizeRoutes(app: FastifyInstance, ctx: ServerContext, state: VllmState): void {
  const { tokenizer } = state;

  app.post('/tokenize', JSON_BODY_ROUTE, async (request, reply) => {
    const body = request.body;
    if (!isPlainObject(body)) return fail(reply, bodyNotObject(body));
    const issues: FieldIssue[] = [];
    const model = modelOf(body, issues);
    // Chat messages count as chat's prompt_tokens do (one rule): each message's text tokenized
    // on its own, the token lists joined; never the texts joined, which can merge tokens.
    let texts: string[];
    // TokenizeChatRequest's `check_generation_prompt` before-validator.
    const conflict = body.messages === undefined ? null : generationPromptConflict(body);
    if (conflict !== null) return fail(reply, conflict);
    // The request models' plain `bool` fields (null is a type error too).
    const reader = new FieldReader(body);
    // In the request model's field order (its errors list them so).
    const addGenerationPrompt = body.messages === undefined ? false : reader.boolNotNull('add_generation_prompt', true);
    const continueFinalMessage = body.messages === undefined ? false : reader.boolNotNull('continue_final_message', false);
    reader.boolNotNull('add_special_tokens', false);
    const chatTemplate = chatTemplateError(continueFinalMessage, addGenerationPrompt);
    if (body.messages !== undefined) readChatTemplateFields(reader);
    issues.push(...reader.issues);
    let renderError: VllmError | null = null;
    if (body.messages !== undefined) {
      const chat = parseChatRequest({ messages: body.messages });
      if (!chat.ok) return fail(reply, chat.error);
      texts = chat.value.messages.map((m) => m.text);
      renderError = chat.value.renderError ?? null;
    } else if (typeof body.prompt === 'string') {
      texts = [body.prompt];
    } else {
      issues.push(body.prompt === undefined
        ? { type: 'missing', loc: ['prompt'], msg: 'Field required', input: body }
        : { type: 'string_type', loc: ['prompt'], msg: 'Input should be a valid string', input: body.prompt });
      texts = [];
    }
    const wantStrs = body.return_token_strs === undefined || body.return_token_strs === null ? false : laxBool(body.return_token_strs);
    if (typeof wantStrs !== 'boolean') issues.push({ ...wantStrs, loc: ['return_token_strs'], input: body.return_token_strs });
    if (issues.length > 0) return fail(reply, validationError(issues));
    const resolved = resolveModel(state, model);
    if (resolved instanceof VllmError) return fail(reply, resolved);
    // Rendering the messages, after the model check: a malformed part, then the chat template
    // refusing continue_final_message with the default add_generation_prompt.
    const rendering = renderError ?? chatTemplate;
    if (rendering !== null) return fail(reply, rendering);
    const pieces = [];
    for (const text of texts) for (const piece of tokenizer.pieces(text)) pieces.push(piece);
    return json(reply, {
      count: pieces.length,
      max_model_len: ctx.options.maxModelLen,
      tokens: pieces.map((p) => p.id),
      token_strs: wantStrs === true ? pieces.map((p) => p.text) : null,
    });
  });

  app.post('/detokenize', JSON_BODY_ROUTE, async (request, reply) => {
    const body = request.body;
    if (!isPlainObject(body)) return fail(reply, bodyNotObject(body));
    const issues: FieldIssue[] = [];
    const model = modelOf(body, issues);
    // `tokens: list[int]`, required: each item read laxly ("1" is 1), as pydantic reads it.
    const reader = new FieldReader(body);
    let ids: number[] | null = null;
    if (body.tokens === undefined) issues.push({ type: 'missing', loc: ['tokens'], msg: 'Field required', input: body });
    else if (body.tokens === null) issues.push({ type: 'list_type', loc: ['tokens'], msg: 'Input should be a valid list', input: null });
    else ids = reader.intList('tokens');
    issues.push(...reader.issues);
    if (issues.length > 0 || ids === null) return fail(reply, validationError(issues));
    const resolved = resolveModel(state, model);
    if (resolved instanceof VllmError) return fail(reply, resolved);
    const text = tokenizer.detokenize(ids);
    if (text === null) {
      const bad = ids.find((id) => tokenizer.detokenize([id]) === null) as number;
      if (bad < 0 || bad > tokenizer.maxTokenId) return fail(reply, badRequest(`Token id ${bad} is out of vocabulary`));
      // In range, but a hashed word id this server never handed out: its word cannot be known.
      return fail(reply, badRequest(`Token id ${bad} cannot be decoded: the ${tokenizer.name} tokenizer hashes words outside its vocabulary and decodes only the word ids it has handed out (--tokenizer cl100k_base decodes any id)`));
    }
    return json(reply, { prompt: text });
  });

  app.get('/version', { exposeHeadRoute: false }, async (_request, reply) => json(reply, { version: VLLM_RELEASE[ctx.options.vllmVersion] }));
}
