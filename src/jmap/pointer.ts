/**
 * JSON pointers (RFC 6901) as JMAP uses them: PatchObject keys (RFC 8620 §5.3, implicit leading
 * `/`) and ResultReference paths with the `*` wildcard (RFC 8620 §3.7).
 */
import { MethodError, SetErrorException } from './errors.js';

/** Splits a pointer into unescaped segments; a leading `/` is optional (`store/port` ≡ `/store/port`). */
export function parsePointer(pointer: string): string[] {
  const p = pointer.startsWith('/') ? pointer.slice(1) : pointer;
  if (p === '') return [];
  return p.split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function patchError(path: string, description: string): SetErrorException {
  return new SetErrorException({ type: 'invalidPatch', description, properties: [path] });
}

/**
 * Applies a PatchObject to a deep copy of `target` and returns the copy. Every key is a pointer; its
 * value replaces what is at that path, `null` removes it (the object's defaults then apply on
 * validation). Intermediate segments must exist: an object key, or an array index (`N` < length,
 * or `N` == length to append). Throws `SetErrorException(invalidPatch)` for a key that is a prefix
 * of another key, or a path that does not exist (RFC 8620 §5.3).
 */
export function applyPatch(target: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(target);
  const keys = Object.keys(patch);
  const norm = keys.map((k) => parsePointer(k).join('/'));
  for (let i = 0; i < norm.length; i++)
    for (let j = 0; j < norm.length; j++)
      if (i !== j && norm[j]!.startsWith(norm[i]! + '/'))
        throw patchError(norm[j]!, `patch keys "${keys[i]}" and "${keys[j]}" overlap`);
  keys.forEach((key, i) => {
    const segs = parsePointer(key);
    const path = norm[i]!;
    if (segs.length === 0) throw patchError('', 'empty patch path');
    let node: unknown = out;
    for (let s = 0; s < segs.length - 1; s++) {
      const seg = segs[s]!;
      const next: unknown = Array.isArray(node) ? (/^\d+$/.test(seg) ? node[Number(seg)] : undefined) : isPlainObject(node) ? node[seg] : undefined;
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
    } else if (isPlainObject(node)) {
      if (value === null) delete node[last];
      else node[last] = value;
    } else throw patchError(path, `path "${key}" does not exist`);
  });
  return out;
}

/**
 * Evaluates a ResultReference path (RFC 8620 §3.7) against a method response's arguments. `*` maps
 * over an array, and arrays produced by the rest of the path are flattened. Throws
 * `MethodError(invalidResultReference)` when the path does not resolve.
 */
export function evaluatePath(value: unknown, pointer: string): unknown {
  if (!pointer.startsWith('/') && pointer !== '') throw new MethodError('invalidResultReference', `path "${pointer}" must start with "/"`);
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
    } else if (isPlainObject(node) && seg === '*') {
      // Extension: `*` also maps over an object's values, so `/created/*/id` works on a /set response.
      return Object.values(node).flatMap((item) => {
        const r = walk(item, i + 1);
        return Array.isArray(r) ? r : [r];
      });
    } else if (isPlainObject(node) && Object.hasOwn(node, seg)) {
      return walk(node[seg], i + 1);
    }
    throw new MethodError('invalidResultReference', `path "${pointer}" does not resolve (at "${seg}")`);
  };
  return walk(value, 0);
}
