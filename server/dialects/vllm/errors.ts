/**
 * vLLM's error vocabulary. Client mistakes are answered in vLLM's shape with a 4xx, never a
 * 500. `VllmError` is the one error type of the vLLM dialect layer.
 */

export type VllmErrorType = 'BadRequestError' | 'NotFoundError' | 'Unauthorized' | 'RequestEntityTooLarge' | 'TooManyRequests' | 'InternalServerError';

export class VllmError extends Error {
  readonly status: number;
  readonly type: VllmErrorType;
  readonly param: string | null;

  constructor(status: number, type: VllmErrorType, message: string, param: string | null = null) {
    super(message);
    this.name = 'VllmError';
    this.status = status;
    this.type = type;
    this.param = param;
  }

  /** The body vLLM 0.10.2+ sends: compact JSON `{"error": {message, type, param, code}}`. */
  body(): string {
    return JSON.stringify({ error: { message: this.message, type: this.type, param: this.param, code: this.status } });
  }
}

export const badRequest = (message: string, param: string | null = null): VllmError =>
  new VllmError(400, 'BadRequestError', message, param);

export const modelNotFound = (model: string): VllmError =>
  new VllmError(404, 'NotFoundError', `The model \`${model}\` does not exist.`, 'model');
