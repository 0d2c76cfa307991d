/**
 * The deployment examples work together: the systemd unit (examples/systemd/spamrule.service) grants
 * what the example configuration (examples/spamrule.toml) needs under its own sandboxing: the port
 * below 1024, and a writable place for every path the configuration writes.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readServeConfig } from '../../src/server/config.js';
import { parseListenAddress } from '../../src/server/index.js';

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The unit's `[Service]` settings (a key given twice keeps its values in order). */
function unitSettings(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) section = header[1]!;
    else if (section === 'Service') {
      const eq = line.indexOf('=');
      out.set(line.slice(0, eq), [...(out.get(line.slice(0, eq)) ?? []), line.slice(eq + 1)]);
    }
  }
  return out;
}

describe('examples/systemd/spamrule.service with examples/spamrule.toml', () => {
  const unit = unitSettings(readFileSync(join(REPO_ROOT, 'examples', 'systemd', 'spamrule.service'), 'utf8'));
  const config = readServeConfig(join(REPO_ROOT, 'examples', 'spamrule.toml'));

  it('runs serve with the example configuration, as an unprivileged user', () => {
    expect(unit.get('ExecStart')?.[0]).toMatch(/\/spamrule serve --config \/etc\/spamrule\/spamrule\.toml$/);
    expect(unit.get('User')).toEqual(['spamrule']);
    expect(unit.get('NoNewPrivileges')).toEqual(['true']);
  });

  it('stops within the unit stop timeout (the grace period, then the workers), and reloads on systemctl reload', () => {
    const graceMs = config.limits?.shutdownGraceMs ?? 30_000;
    const stopSec = Number(unit.get('TimeoutStopSec')?.[0]);
    // Closing the pool after the grace period takes a second or two; systemd kills at TimeoutStopSec.
    expect(stopSec * 1000 - graceMs).toBeGreaterThanOrEqual(10_000);
    expect(unit.get('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
  });

  it('may bind every listener port below 1024 the configuration names', () => {
    const ports = [config.rspamd, config.milter, config.spamd, config.metrics, config.listen]
      .filter((a): a is string => typeof a === 'string' && !a.startsWith('unix:'))
      .map((a) => parseListenAddress(a))
      .filter((a): a is { host: string; port: number } => 'port' in a);
    const low = ports.filter((p) => p.port < 1024);
    expect(low.map((p) => p.port)).toEqual([783]);
    expect(unit.get('AmbientCapabilities')?.join(' ')).toMatch(/\bCAP_NET_BIND_SERVICE\b/);
    expect(unit.get('CapabilityBoundingSet')?.join(' ')).toMatch(/\bCAP_NET_BIND_SERVICE\b/);
  });

  it('creates nothing other users may read: the registry holds store passwords in clear (UMask, StateDirectoryMode)', () => {
    expect(unit.get('UMask')).toEqual(['0077']);
    expect(unit.get('StateDirectoryMode')).toEqual(['0750']);
  });

  it('can write every path the configuration writes (ProtectSystem=strict, ProtectHome=true)', () => {
    expect(unit.get('ProtectSystem')).toEqual(['strict']);
    expect(unit.get('ProtectHome')).toEqual(['true']);
    const writable = [
      ...(unit.get('StateDirectory') ?? []).map((d) => `/var/lib/${d}/`),
      ...(unit.get('CacheDirectory') ?? []).map((d) => `/var/cache/${d}/`),
      ...(unit.get('RuntimeDirectory') ?? []).map((d) => `/run/${d}/`),
    ];
    // listCacheDir must be set: its default is under the home folder, which ProtectHome hides.
    const written = [config.listCacheDir, config.db].filter((p): p is string => p !== undefined);
    expect(config.listCacheDir).toBeDefined();
    for (const p of written) expect(writable.some((w) => p.startsWith(w)), `${p} is in none of ${writable.join(', ')}`).toBe(true);
    // The commented-out registry of the example lies there too, so that uncommenting it works.
    const toml = readFileSync(join(REPO_ROOT, 'examples', 'spamrule.toml'), 'utf8');
    const db = /^# db = "([^"]+)"/m.exec(toml)?.[1];
    expect(db).toBeDefined();
    expect(writable.some((w) => db!.startsWith(w))).toBe(true);
  });

  it('takes every commented-out setting where it stands: uncommented, each lands at its own key, not in a table above it', () => {
    const toml = readFileSync(join(REPO_ROOT, 'examples', 'spamrule.toml'), 'utf8');
    // `# key = value` and `# [table]` lines are settings to uncomment; other comments are prose.
    const uncommented = toml.replace(/^# (?=\[[A-Za-z.]+\]|[A-Za-z][\w-]* = )/gm, '');
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-example-'));
    try {
      const file = join(dir, 'spamrule.toml');
      writeFileSync(file, uncommented);
      const all = readServeConfig(file);
      expect(all.db).toBe('/var/lib/spamrule/spamrule.db');
      expect(all.listen).toBe('127.0.0.1:8080');
      expect(all.model).toBe('/var/lib/spamrule/model.sqlite');
      expect(all.allowLearn).toBe(true);
      expect(all.managedStores?.sqliteDir).toBe('/var/lib/spamrule/lookup');
      expect(all.lists).toEqual(['trusted-domains=/etc/spamrule/trusted-domains.txt']);
      expect(all.analysis?.regexWorkLimit).toBe(67108864);
      expect(all.limits?.learnPerMinute).toBe(60);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
