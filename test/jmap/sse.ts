/** A node:http client for the JMAP event source (RFC 8620 §7.3) that reads text/event-stream as it comes. */
import { request, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { Harness } from './harness.js';

export interface SseEvent {
  event: string;
  id?: string;
  data: any;
  /** ms since the stream opened */
  at: number;
}

export interface Stream {
  status: 200;
  headers: IncomingHttpHeaders;
  events: SseEvent[];
  /** The next event not yet taken; rejects after `ms` or when the stream ends first. */
  next(ms?: number): Promise<SseEvent>;
  /** Resolves once the response ended cleanly; rejects when the connection broke instead. */
  ended: Promise<void>;
  isEnded(): boolean;
  close(): void;
}

export interface Refusal {
  status: number;
  headers: IncomingHttpHeaders;
  json: any;
}

export const ALL = '?types=*&closeafter=no&ping=0';

/** GETs the event source; a 200 becomes a Stream, anything else is read whole. */
export function open(h: Harness, query: string, token: string | null = h.admin, headers: Record<string, string> = {}, method = 'GET'): Promise<Stream | Refusal> {
  const url = new URL(`${h.server.url}/jmap/eventsource/${query}`);
  return new Promise((resolve, reject) => {
    const req: ClientRequest = request(url, { method, headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...headers } }, (res: IncomingMessage) => {
      res.setEncoding('utf8');
      if (res.statusCode !== 200) {
        let text = '';
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, json: text === '' ? undefined : JSON.parse(text) }));
        return;
      }
      const t0 = Date.now();
      const events: SseEvent[] = [];
      let taken = 0;
      let buf = '';
      let ended = false;
      const waiters = new Set<() => void>();
      const wake = () => {
        for (const w of [...waiters]) w();
      };
      res.on('data', (c: string) => {
        buf += c;
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev: Partial<SseEvent> = { at: Date.now() - t0 };
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const colon = line.indexOf(':');
            const field = line.slice(0, colon);
            const value = line.slice(colon + 1).replace(/^ /, '');
            if (field === 'event') ev.event = value;
            else if (field === 'id') ev.id = value;
            else if (field === 'data') ev.data = JSON.parse(value);
          }
          if (ev.event !== undefined) events.push(ev as SseEvent);
        }
        wake();
      });
      const endedP = new Promise<void>((ok, fail) => {
        res.on('end', () => {
          ended = true;
          wake();
          ok();
        });
        res.on('error', fail);
        res.on('aborted', () => fail(new Error('aborted')));
      });
      endedP.catch(() => {
        ended = true;
        wake();
      });
      const next = (ms = 3000) =>
        new Promise<SseEvent>((ok, fail) => {
          const check = () => {
            if (taken < events.length) {
              done();
              ok(events[taken++]!);
            } else if (ended) {
              done();
              fail(new Error('the stream ended'));
            }
          };
          const timer = setTimeout(() => {
            done();
            fail(new Error(`no event within ${ms} ms`));
          }, ms);
          const done = () => {
            clearTimeout(timer);
            waiters.delete(check);
          };
          waiters.add(check);
          check();
        });
      resolve({ status: 200, headers: res.headers, events, next, ended: endedP, isEnded: () => ended, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

export async function stream(h: Harness, query: string, token?: string, headers?: Record<string, string>): Promise<Stream> {
  const s = await open(h, query, token, headers);
  if (s.status !== 200) throw new Error(`HTTP ${s.status}: ${JSON.stringify((s as Refusal).json)}`);
  return s as Stream;
}

export async function refusal(h: Harness, query: string, token?: string | null, method?: string): Promise<Refusal> {
  const r = await open(h, query, token, {}, method);
  if (r.status === 200) {
    (r as Stream).close();
    throw new Error('expected a refusal, got a stream');
  }
  return r as Refusal;
}

export const until = async (cond: () => boolean, ms = 3000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};
