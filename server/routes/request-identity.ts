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

  next(clientRequestId: string | string[] | undefined): RequestIdentity {
    const sent = Array.isArray(clientRequestId) ? clientRequestId[0] : clientRequestId;
    if (sent !== undefined && sent !== '') return { id: sent, key: sent };
    const key = `#${this.#counter++}`;
    return { id: hex32(new Rng(this.#seed).derive(`request-id${key}`)), key };
  }
}
