/**
 * Who a request is: its id (the client's x-request-id, else a deterministic id from the server
 * seed and a counter) and the key its random stream is derived from (DESIGN §2).
 */
import { hex32, Rng } from '../../contracts/rng.ts';

export interface RequestIdentity {
  id: string;
  key: string;
}

export class RequestIdentities {
  readonly #seed: number;
  #counter = 0;

  constructor(seed: number) {
    this.#seed = seed;
  }

  /**
   * `bodyRequestId`: chat's `request_id` field, which vLLM 0.11 uses when the header is absent
   * or empty (`headers.get("X-Request-Id") or request.request_id`).
   */
  next(clientRequestId: string | string[] | undefined, bodyRequestId?: string): RequestIdentity {
    const header = Array.isArray(clientRequestId) ? clientRequestId[0] : clientRequestId;
    const sent = header !== undefined && header !== '' ? header : bodyRequestId;
    if (sent !== undefined && sent !== '') return { id: sent, key: sent };
    const key = `#${this.#counter++}`;
    return { id: hex32(new Rng(this.#seed).derive(`request-id${key}`)), key };
  }
}
