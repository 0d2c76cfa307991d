/** Is `v` an object that is neither `null` nor an array (a JSON object, as configurations and JMAP arguments are)? */
export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
