/** Every API the client can drive, by name. */
import type { ApiAdapter, ApiName } from './api-adapter.ts';
import { completionsApi } from './completions.ts';

export const API_ADAPTERS: Readonly<Record<ApiName, ApiAdapter>> = Object.freeze({ completions: completionsApi });

export type { ApiAdapter, ApiName, Payload, RequestInput } from './api-adapter.ts';
