// Worker-thread entry: Node 20 does not pass module hooks on to workers, so the worker
// registers tsx itself before loading the TypeScript server.
import { register } from 'tsx/esm/api';

register();
await import('./thread-main.ts');
