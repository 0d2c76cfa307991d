// Worker entry used only when spamrule runs from its TypeScript sources (tests, tsx): registers
// tsx's loader in this thread, then loads worker.ts. The compiled package uses worker.js directly.
import { register } from 'tsx/esm/api';

register();
const mod = await import('./worker.ts');
export default mod.default;
