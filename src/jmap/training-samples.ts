/**
 * `x:SpamTrainingSample`: Stalwart's training-sample object (docs/classifier.md "Training over
 * JMAP"). A client uploads a message (RFC 8620 §6.1), then creates a sample naming its `blobId`
 * and class; the message is copied into the classifier's store before the create is answered (the
 * acknowledgement: a sample reported created is durable), and the next training run uses it.
 * Destroying the object forgets the sample. Samples are immutable: `/set update` is refused.
 *
 * Properties (Stalwart's): `blobId`, `isSpam`, `accountId` (absent: a global sample), `expiresAt`
 * (UTCDate, default now + 180 days, Stalwart's `holdSamplesFor`), `deleteAfterUse`, and the
 * informational `from` / `subject`, which the server reads from the message.
 */
import { splitHeaders, decodeText } from '../message/headers.js';
import { invalidProperties, MethodError, SetErrorException } from './errors.js';
import type { Data, KindHookContext, ObjectKind } from './kind.js';
import { pointerSegment } from './pointer.js';
import { isObject } from '../util/index.js';

export type { TrainingSampleSink } from './kind.js';

/** Stalwart's `holdSamplesFor` default: 180 days, in ms. */
export const HOLD_SAMPLES_MS = 180 * 86_400_000;
const UTC_DATE_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const SETTABLE = new Set(['blobId', 'isSpam', 'accountId', 'expiresAt', 'deleteAfterUse']);
const SERVER_SET = new Set(['id', 'from', 'subject']);
/** Characters of From/Subject kept on the object (they are informational). */
const MAX_INFO_CHARS = 1000;

/** Objects returned by prepareCreate: create() accepts only these (a client cannot set `sampleId`). */
const prepared = new WeakSet<object>();

function utcDate(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** From and Subject of a message (decoded, unfolded, capped), null when absent. */
function info(raw: Buffer): { from: string | null; subject: string | null } {
  const end = raw.indexOf('\r\n\r\n') >= 0 ? raw.indexOf('\r\n\r\n') : raw.indexOf('\n\n');
  const headers = splitHeaders(raw.subarray(0, end < 0 ? Math.min(raw.length, 256 * 1024) : end + 2).toString('utf8'), []);
  const pick = (name: string): string | null => {
    const h = headers.find((x) => x.name.toLowerCase() === name);
    return h === undefined ? null : decodeText(h.raw).slice(0, MAX_INFO_CHARS);
  };
  return { from: pick('from'), subject: pick('subject') };
}

function validateInput(input: unknown): { blobId: string; isSpam: boolean; accountId: number | null; expiresAt: string; deleteAfterUse: boolean } {
  if (!isObject(input)) throw new SetErrorException({ type: 'invalidPatch', description: 'a SpamTrainingSample must be a JSON object', properties: [''] });
  const problems: { path: string; message: string }[] = [];
  for (const k of Object.keys(input)) {
    if (SERVER_SET.has(k)) problems.push({ path: k, message: 'is set by the server' });
    else if (!SETTABLE.has(k)) problems.push({ path: pointerSegment(k), message: 'unknown property' });
  }
  const { blobId, isSpam, accountId = null, expiresAt = null, deleteAfterUse = false } = input;
  if (typeof blobId !== 'string' || blobId === '') problems.push({ path: 'blobId', message: 'required: the blobId of an uploaded message' });
  if (typeof isSpam !== 'boolean') problems.push({ path: 'isSpam', message: 'required: true (spam) or false (ham)' });
  if (accountId !== null && !(Number.isInteger(accountId) && (accountId as number) >= 0 && (accountId as number) <= 0xffffffff))
    problems.push({ path: 'accountId', message: 'must be null or an integer from 0 to 4294967295' });
  if (expiresAt !== null && !(typeof expiresAt === 'string' && UTC_DATE_RE.test(expiresAt) && Number.isFinite(Date.parse(expiresAt))))
    problems.push({ path: 'expiresAt', message: 'must be null or a UTCDate such as 2027-01-31T00:00:00Z (RFC 8620 §1.4)' });
  if (typeof deleteAfterUse !== 'boolean') problems.push({ path: 'deleteAfterUse', message: 'must be a boolean' });
  if (problems.length > 0) throw invalidProperties(problems);
  return {
    blobId: blobId as string,
    isSpam: isSpam as boolean,
    accountId: accountId as number | null,
    expiresAt: (expiresAt as string | null) ?? utcDate(Date.now() + HOLD_SAMPLES_MS),
    deleteAfterUse: deleteAfterUse as boolean,
  };
}

export const SpamTrainingSampleKind: ObjectKind = {
  type: 'SpamTrainingSample',
  permissionPrefix: 'sysSpamTrainingSample',
  properties: ['id', 'blobId', 'isSpam', 'accountId', 'expiresAt', 'deleteAfterUse', 'from', 'subject'],
  // The classifier store's sample id: unique by construction, never on the wire.
  uniqueProperty: 'sampleId',
  async prepareCreate(input: unknown, ctx: KindHookContext): Promise<Data> {
    const v = validateInput(input);
    if (ctx.samples === undefined)
      throw new SetErrorException({ type: 'forbidden', description: 'this server has no classifier model to train (spamrule serve --model FILE)' });
    const blob = ctx.blobs?.get(v.blobId);
    if (blob === undefined)
      throw new SetErrorException({ type: 'blobNotFound', description: `no uploaded blob "${v.blobId}" (upload the message first; blobs expire after an hour)`, notFound: [v.blobId] });
    let sampleId: number;
    try {
      sampleId = await ctx.samples.add(blob.data, v.isSpam, { ...(v.accountId !== null ? { account: v.accountId } : {}), deleteAfterUse: v.deleteAfterUse });
    } catch (e) {
      throw new MethodError('serverFail', `the classifier store did not take the sample: ${e instanceof Error ? e.message : String(e)}`);
    }
    const data: Data = { ...v, ...info(blob.data), sampleId };
    prepared.add(data);
    return data;
  },
  async discardCreate(data: Data, ctx: KindHookContext): Promise<void> {
    await ctx.samples?.remove(data.sampleId as number);
  },
  async afterDestroy(data: Data, ctx: KindHookContext): Promise<void> {
    await ctx.samples?.remove(data.sampleId as number);
  },
  create(input) {
    if (!isObject(input) || !prepared.has(input)) throw invalidProperties([{ path: '', message: 'not a prepared sample' }]);
    return input;
  },
  update() {
    throw new SetErrorException({ type: 'forbidden', description: 'training samples cannot be changed: destroy the sample and create another' });
  },
  toWire(id, data) {
    const { sampleId: _internal, ...wire } = data;
    return { id, ...wire };
  },
  createdEcho(input, data) {
    const echo: Data = { from: data.from, subject: data.subject };
    for (const k of ['accountId', 'expiresAt', 'deleteAfterUse']) if (!(k in input)) echo[k] = data[k];
    return echo;
  },
  matches(cond, _id, data) {
    return Object.entries(cond).every(([k, v]) => {
      if (typeof v !== 'string') throw new MethodError('unsupportedFilter', `filter "${k}" needs a string`);
      if (k === 'class') {
        if (v !== 'spam' && v !== 'ham') throw new MethodError('unsupportedFilter', 'filter "class" is "spam" or "ham"');
        return data.isSpam === (v === 'spam');
      }
      if (k === 'from' || k === 'subject') return String(data[k] ?? '').toLowerCase().includes(v.toLowerCase());
      throw new MethodError('unsupportedFilter', `cannot filter x:SpamTrainingSample on "${k}"`);
    });
  },
  filterProperties: ['class', 'from', 'subject'],
  sortKeys: {
    id: (id) => id,
    expiresAt: (_id, d) => d.expiresAt as string,
  },
};

/**
 * Destroys the samples whose `expiresAt` has passed (Stalwart lets them lapse after `holdSamplesFor`)
 * and forgets their messages in the classifier's store. Returns how many expired. Throws when the
 * registry cannot be written (nothing is then forgotten).
 */
export async function expireSamples(
  repo: { transact<T>(type: 'SpamTrainingSample', fn: (w: { objects: Map<string, Data> }) => { result: T; touched: Set<string> }): Promise<T> },
  sink: { remove(id: number): Promise<void> } | undefined,
  nowMs = Date.now(),
): Promise<number> {
  const gone = await repo.transact('SpamTrainingSample', (working) => {
    const expired: Data[] = [];
    const touched = new Set<string>();
    for (const [id, d] of working.objects) {
      if (typeof d.expiresAt === 'string' && Date.parse(d.expiresAt) <= nowMs) {
        expired.push(d);
        touched.add(id);
        working.objects.delete(id);
      }
    }
    return { result: expired, touched };
  });
  for (const d of gone) await sink?.remove(d.sampleId as number).catch(() => undefined);
  return gone.length;
}
