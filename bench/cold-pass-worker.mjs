// Entry of the learn bench's cold-pass worker (model-cost.ts): a worker thread does not inherit tsx's
// loader, so this registers it, then loads the TypeScript worker.
import { register } from 'tsx/esm/api';

register();
await import('./cold-pass-worker.ts');
