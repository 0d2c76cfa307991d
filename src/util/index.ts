/** Small helpers shared by every part (no imports of their own, so any part may use them). */
export { MemoSlot, type MemoHolder } from './memo.js';
export { SmallMap, SMALL_MAP_LINEAR } from './small-map.js';
export { prng } from './prng.js';
export { isStackOverflow } from './stack.js';
export { detach } from './strings.js';
export { pointerSegment, unescapePointerSegment } from './pointer.js';
export { closestName, editDistance } from './suggest.js';
export { isObject } from './is-object.js';
export { MAX_TAG_LENGTH, quoteTag, tagNameProblem } from './tag-name.js';
export { VERSION } from './version.js';
export { WaitClock } from './wait-clock.js';
export { BreakerState, type Admission, type BreakerTiming, type OpenBreaker } from './breaker.js';
export { joinNegativeValues, numberArg, parseCliArgs } from './args.js';
export { jsonErrorWhere, parseJsonText } from './json-text.js';
export { MAX_TIMER_MS, timeoutMsProblem } from './timer.js';
