/**
 * Who a request is: its id (the client's x-request-id, else a deterministic id from the server
 * seed and a counter) and the key its random stream is derived from (DESIGN §2).
 *
 * The id is the text the truth record is filed under and the `cmpl-`/`chatcmpl-` ids carry. A
 * header id is the header's bytes read as Latin-1, as Node and Starlette read them (so a UTF-8
 * `café` is the text `cafÃ©`, as vLLM's ids show it). `header` is what the response's
 * x-request-id carries: the same bytes for a header id, the percent-encoding for a body id that
 * cannot be a header value (transport/id-header.ts).
 */
import { hex32, Rng } from '../../contracts/rng.ts';
import { idHeaderValue } from '../transport/id-header.ts';

export interface RequestIdentity {
  id: string;
  key: string;
  /** The response's x-request-id value for `id`. */
  header: string;
}

const SURROGATE = /[\uD800-\uDFFF]/;

/**
 * A JSON string may hold lone surrogates, which no response (header or UTF-8 body) can carry;
 * they become U+FFFD, as a UTF-8 encoder writes them, so the id stays one text everywhere.
 */
function wellFormed(id: string): string {
  return SURROGATE.test(id) ? Buffer.from(id, 'utf8').toString('utf8') : id;
}

export class RequestIdentities {
  readonly #seed: number;
  #counter = 0;

  constructor(seed: number) {
    this.#seed = seed;
  }

  /**
   * `bodyRequestId`: the body's `request_id` field (completions and chat), which vLLM 0.11 uses when the header is absent
   * or empty (`headers.get("X-Request-Id") or request.request_id`).
   */
  next(header: string | undefined, bodyRequestId?: string): RequestIdentity {
    if (header !== undefined && header !== '') return { id: header, key: header, header: idHeaderValue(header) };
    if (bodyRequestId !== undefined && bodyRequestId !== '') {
      const id = wellFormed(bodyRequestId);
      return { id, key: id, header: idHeaderValue(id) };
    }
    const key = `#${this.#counter++}`;
    const id = hex32(new Rng(this.#seed).derive(`request-id${key}`));
    return { id, key, header: id };
  }
}
