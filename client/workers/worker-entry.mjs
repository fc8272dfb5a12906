// Worker-thread entry: loads the TypeScript sources through tsx, then runs the benchmark worker.
import { register } from 'tsx/esm/api';

register();
await import('./bench-worker.ts');
