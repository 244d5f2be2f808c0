/**
 * What a release carries besides the code (docs/operations/install.md): CHANGELOG.md has an entry for the
 * version package.json names and lists every migration of the release, the LICENSE is the MIT text
 * package.json names, the package ships the compiled program and not the sources, and compose.yaml runs
 * each role of the code as a service of its own and passes every setting. No database, no server: it
 * reads files. The package itself is installed and started by scripts/check-package.sh, the image built
 * and run by scripts/check-image.sh.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ROLES, unknownEnvironmentVariables } from '../src/config/config.ts';
import { HERALD_VERSION } from '../src/version.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const pkg = JSON.parse(read('package.json')) as { version: string; license: string; files: string[]; engines: { node: string } };

describe('the release', () => {
  it('has a semantic version, which herald reports', () => {
    expect(pkg.version).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
    expect(HERALD_VERSION).toBe(pkg.version);
  });

  it('CHANGELOG.md has an entry for this version and names every migration', () => {
    const changelog = read('CHANGELOG.md');
    expect(changelog).toMatch(new RegExp(`^## \\[${pkg.version.replaceAll('.', '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}$`, 'm'));
    const migrations = readdirSync(join(ROOT, 'src/store/migrations')).filter((name) => name.endsWith('.sql'));
    expect(migrations.length).toBeGreaterThan(0);
    const missing = migrations.map((name) => name.replace(/\.sql$/, '')).filter((name) => !changelog.includes(`- ${name}:`));
    expect(missing, 'migrations CHANGELOG.md does not list (add them to the entry of the release that brings them)').toEqual([]);
  });

  it('LICENSE is the MIT licence package.json names', () => {
    expect(pkg.license).toBe('MIT');
    const license = read('LICENSE');
    expect(license).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} herald contributors\n/);
    expect(license).toContain('THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND');
  });

  it('the package ships the compiled program, not the sources, and names the supported Node versions', () => {
    expect(pkg.files).toContain('dist');
    expect(pkg.files).toContain('bin');
    expect(pkg.files.filter((entry) => /^(src|test|console)\b/.test(entry))).toEqual([]);
    expect(pkg.engines.node).toBe('^20.19.0 || >=22.11.0');
  });

  it('the Dockerfile: two stages on Node 22 slim, a non-root user, herald serve as entrypoint, HEALTHCHECK on /readyz, data and config as volumes', () => {
    const dockerfile = read('Dockerfile');
    const base = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1] ?? '';
    expect(base).toMatch(/^node:22(\.\d+)*-[a-z]+-slim$/);
    expect([...dockerfile.matchAll(/^FROM \$\{NODE_IMAGE\}/gm)]).toHaveLength(2);
    const user = /^USER (\S+)$/m.exec(dockerfile)?.[1] ?? 'root';
    expect(user.split(':')[0]).not.toMatch(/^(root|0)$/);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["herald"\]$/m);
    expect(dockerfile).toMatch(/^CMD \["serve"\]$/m);
    const healthcheck = /^HEALTHCHECK .* CMD \["node", "\/opt\/herald\/(deploy\/container\/readyz\.mjs)"\]$/m.exec(dockerfile)?.[1] ?? '';
    expect(healthcheck).not.toBe('');
    expect(read(healthcheck)).toContain('/readyz');
    expect(dockerfile).toMatch(/^VOLUME \["\/var\/lib\/herald", "\/etc\/herald"\]$/m);
    expect(dockerfile).toMatch(/HERALD_DATA_DIR=\/var\/lib\/herald/);
  });

  it('compose.yaml runs each role of the code as a service of its own', () => {
    const compose = read('compose.yaml');
    for (const role of ROLES) {
      expect(compose, `a service herald-${role} with HERALD_ROLES: ${role}`).toMatch(
        new RegExp(`^  herald-${role}:\\n(?:    .*\\n|\\s*\\n)*?      HERALD_ROLES: ${role}$`, 'm'),
      );
    }
  });

  it('compose.yaml has PostgreSQL, and PgBouncer in transaction mode behind an optional profile', () => {
    const compose = read('compose.yaml');
    expect(compose).toMatch(/^ {2}postgres:\n(?: {4}.*\n|\s*\n)*? {4}image: \S*postgres/m);
    expect(compose).toMatch(/^ {2}pgbouncer:\n {4}profiles: \[pgbouncer\]\n(?: {4}.*\n|\s*\n)*? {6}POOL_MODE: transaction$/m);
  });

  it('compose.yaml passes every setting herald reads from the environment, and no name it does not read', () => {
    const compose = read('compose.yaml');
    const passed = [...compose.matchAll(/^ +(HERALD_[A-Z0-9_]+):/gm)].map((m) => m[1] as string);
    expect(unknownEnvironmentVariables(Object.fromEntries(passed.map((name) => [name, 'x'])))).toEqual([]);
    // The list config.ts keeps of the variables it reads; the image itself sets host, port and data directory.
    const source = read('src/config/config.ts');
    const list = /const ENVIRONMENT_VARIABLES = \[([^\]]*)\]/.exec(source)?.[1] ?? '';
    const readByHerald = [...list.matchAll(/'(HERALD_[A-Z0-9_]+)'/g)].map((m) => m[1] as string);
    expect(readByHerald.length).toBeGreaterThan(10);
    const imageSets = ['HERALD_HOST', 'HERALD_PORT', 'HERALD_DATA_DIR'];
    expect(readByHerald.filter((name) => !imageSets.includes(name) && !passed.includes(name))).toEqual([]);
  });
});
