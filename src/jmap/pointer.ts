/**
 * JSON pointers (RFC 6901) as JMAP uses them: PatchObject keys (RFC 8620 §5.3, implicit leading
 * `/`) and ResultReference paths with the `*` wildcard (RFC 8620 §3.7).
 */
import { MethodError, SetErrorException } from './errors.js';
import { isObject, pointerSegment, unescapePointerSegment } from '../util/index.js';

export { pointerSegment };

/** Splits a pointer into unescaped segments; a leading `/` is optional (`store/port` ≡ `/store/port`). */
export function parsePointer(pointer: string): string[] {
  const p = pointer.startsWith('/') ? pointer.slice(1) : pointer;
  if (p === '') return [];
  return p.split('/').map(unescapePointerSegment);
}

/**
 * Why `pointer` is not a JSON pointer (RFC 6901 §3: a `~` is `~0` or `~1`, nothing else), or undefined.
 * parsePointer keeps such a `~` as it is, which would take "a~b" to name a property no client can have
 * meant: a PatchObject key or a ResultReference path with one is refused instead.
 */
function badEscape(pointer: string): string | undefined {
  return /~(?![01])/.test(pointer) ? `path "${pointer}" is not a JSON pointer: "~" must be followed by 0 or 1 (RFC 6901)` : undefined;
}

function patchError(path: string, description: string): SetErrorException {
  return new SetErrorException({ type: 'invalidPatch', description, properties: [path] });
}

/**
 * A segment that names no property of any JMAP object, but would reach JavaScript's prototype chain
 * if followed or assigned (`node["__proto__"] = v` replaces `node`'s prototype instead of setting a
 * property). Refused as a path that does not exist.
 */
const PROTOTYPE_SEGMENT = '__proto__';

/**
 * Segments a patch path may have at most. The deepest property of these objects is four segments
 * down (`condition/match/0/if`); a deeper path cannot exist, and refusing it first keeps the overlap
 * check linear in the request's size.
 */
export const MAX_PATCH_DEPTH = 32;

/**
 * Applies a PatchObject to a deep copy of `target` and returns the copy. Every key is a pointer; its
 * value replaces what is at that path, `null` removes it (the object's defaults then apply on
 * validation). Intermediate segments must exist as the object's own keys (never inherited ones), or
 * as array indexes (`N` < length, or `N` == length to append). Throws
 * `SetErrorException(invalidPatch)` for a key that is a prefix of another key, that is not a JSON
 * pointer (a `~` not followed by 0 or 1), or a path that does not exist (RFC 8620 §5.3). Linear in the total length of the keys: the overlap check looks each
 * key's proper prefixes up in a set rather than comparing every pair.
 */
export function applyPatch(target: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(target);
  const keys = Object.keys(patch);
  const segsOf = keys.map((k) => parsePointer(k));
  segsOf.forEach((segs, i) => {
    const bad = badEscape(keys[i]!);
    if (bad !== undefined) throw patchError(keys[i]!, bad);
    if (segs.length > MAX_PATCH_DEPTH) throw patchError(keys[i]!, `path "${keys[i]}" is deeper than any property (${MAX_PATCH_DEPTH} segments)`);
  });
  const norm = segsOf.map((segs) => segs.join('/'));
  const index = new Map<string, number>();
  norm.forEach((n, i) => index.set(n, i));
  norm.forEach((n, j) => {
    for (let cut = n.indexOf('/'); cut >= 0; cut = n.indexOf('/', cut + 1)) {
      const i = index.get(n.slice(0, cut));
      if (i !== undefined) throw patchError(n, `patch keys "${keys[i]}" and "${keys[j]}" overlap`);
    }
  });
  keys.forEach((key, i) => {
    const segs = segsOf[i]!;
    const path = norm[i]!;
    if (segs.length === 0) throw patchError('', 'empty patch path');
    if (segs.includes(PROTOTYPE_SEGMENT)) throw patchError(path, `path "${key}" does not exist`);
    let node: unknown = out;
    for (let s = 0; s < segs.length - 1; s++) {
      const seg = segs[s]!;
      const next: unknown = Array.isArray(node)
        ? /^\d+$/.test(seg) ? node[Number(seg)] : undefined
        : isObject(node) && Object.hasOwn(node, seg) ? node[seg] : undefined;
      if (next === null || typeof next !== 'object') throw patchError(path, `path "${key}" does not exist`);
      node = next;
    }
    const last = segs[segs.length - 1]!;
    const value = structuredClone(patch[key]);
    if (Array.isArray(node)) {
      if (!/^\d+$/.test(last) || Number(last) > node.length) throw patchError(path, `index "${last}" is out of range`);
      const idx = Number(last);
      if (value === null) {
        if (idx >= node.length) throw patchError(path, `no item at index ${idx}`);
        node.splice(idx, 1);
      } else node[idx] = value;
    } else if (isObject(node)) {
      if (value === null) delete node[last];
      else node[last] = value;
    } else throw patchError(path, `path "${key}" does not exist`);
  });
  return out;
}

/**
 * Evaluates a ResultReference path (RFC 8620 §3.7) against a method response's arguments. `*` maps
 * over an array, and arrays produced by the rest of the path are flattened. Throws
 * `MethodError(invalidResultReference)` when the path is not a JSON pointer or does not resolve.
 */
export function evaluatePath(value: unknown, pointer: string): unknown {
  if (!pointer.startsWith('/') && pointer !== '') throw new MethodError('invalidResultReference', `path "${pointer}" must start with "/"`);
  const bad = badEscape(pointer);
  if (bad !== undefined) throw new MethodError('invalidResultReference', bad);
  const segs = parsePointer(pointer);
  const walk = (node: unknown, i: number): unknown => {
    if (i === segs.length) return node;
    const seg = segs[i]!;
    if (Array.isArray(node)) {
      if (seg === '*') {
        return node.flatMap((item) => {
          const r = walk(item, i + 1);
          return Array.isArray(r) ? r : [r];
        });
      }
      if (/^\d+$/.test(seg) && Number(seg) < node.length) return walk(node[Number(seg)], i + 1);
    } else if (isObject(node) && seg === '*') {
      // Extension: `*` also maps over an object's values, so `/created/*/id` works on a /set response.
      return Object.values(node).flatMap((item) => {
        const r = walk(item, i + 1);
        return Array.isArray(r) ? r : [r];
      });
    } else if (isObject(node) && Object.hasOwn(node, seg)) {
      return walk(node[seg], i + 1);
    }
    throw new MethodError('invalidResultReference', `path "${pointer}" does not resolve (at "${seg}")`);
  };
  return walk(value, 0);
}
