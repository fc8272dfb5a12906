/** The run layer's one error type: a setting or a server the run cannot work with. */
export class BenchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BenchError';
  }
}
