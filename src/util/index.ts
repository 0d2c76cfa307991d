/** Small helpers shared by every part (no imports of their own, so any part may use them). */
export { detach } from './strings.js';
