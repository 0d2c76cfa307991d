/**
 * `spamrule serve --db PATH [--listen 127.0.0.1:PORT] [--pg URL] [--capability URN]`: runs the JMAP
 * management API (src/jmap, DECISIONS.md §5) until SIGINT/SIGTERM.
 */
import { parseArgs } from 'node:util';

const USAGE = `usage: spamrule serve --db PATH [--listen HOST:PORT] [--pg postgres://…] [--capability URN]

  --db PATH          SQLite database for tokens (and objects unless --pg); created if missing
  --listen HOST:PORT address to listen on (default 127.0.0.1:8080; port 0 = random)
  --pg URL           keep SpamRules/StoreLookups in PostgreSQL; servers on one database see each other's changes
  --capability URN   management capability URN (default urn:stalwart:jmap)

Create a token first: spamrule token create --db PATH --permissions all`;

/** Parses `host:port`, `[v6]:port` or a bare port. Throws `Error` for anything else. */
export function parseListen(s: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(s) ?? (/^(\d+)$/.test(s) ? [s, undefined, '127.0.0.1', s] : null);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--listen: expected HOST:PORT, got "${s}"`);
  return { host: m[1] ?? m[2]!, port };
}

export async function run(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        db: { type: 'string' },
        listen: { type: 'string', default: '127.0.0.1:8080' },
        pg: { type: 'string' },
        capability: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    process.stderr.write(`spamrule serve: ${(e as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (values.db === undefined) {
    process.stderr.write(`spamrule serve: --db is required\n${USAGE}\n`);
    return 2;
  }
  let listen;
  try {
    listen = parseListen(values.listen);
  } catch (e) {
    process.stderr.write(`spamrule serve: ${(e as Error).message}\n`);
    return 2;
  }
  const { createJmapServer } = await import('../jmap/index.js');
  const server = await createJmapServer({ db: values.db, pg: values.pg, capability: values.capability, ...listen });
  // Tests and scripts read this line to learn the (possibly random) port.
  process.stdout.write(`spamrule serve: listening on ${server.url}\n`);
  return new Promise<number>((resolve) => {
    const stop = (): void => {
      server.close().then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
