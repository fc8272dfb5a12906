/** What every route shares: options, the clock, the scheduler, the truth store, request ids. */
import type { Clock } from '../contracts/clock.ts';
import type { ServerOptions } from './options.ts';
import type { RequestIdentities } from './routes/request-identity.ts';
import type { EmissionScheduler } from './transport/emission-scheduler.ts';
import type { TruthStore } from './truth/truth-store.ts';

export interface ServerContext {
  options: ServerOptions;
  clock: Clock;
  scheduler: EmissionScheduler;
  truth: TruthStore;
  identities: RequestIdentities;
}
