/**
 * vLLM's two generation endpoints, named once: the routes, their method-not-allowed answers,
 * the truth records and the scenario schema all refer to these.
 */
export const COMPLETIONS_PATH = '/v1/completions';
export const CHAT_COMPLETIONS_PATH = '/v1/chat/completions';
export const GENERATION_PATHS = [COMPLETIONS_PATH, CHAT_COMPLETIONS_PATH] as const;
export type GenerationPath = (typeof GENERATION_PATHS)[number];
