// Training worker entry used only when spamrule runs from its TypeScript sources (tests, tsx):
// registers tsx's loader in this process, then loads train-worker.ts. The package uses train-worker.js.
import { register } from 'tsx/esm/api';

register();
await import('./train-worker.ts');
