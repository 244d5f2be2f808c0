/**
 * What a test file does when the real node binary it needs (litecoind, ...) is not installed.
 *
 * - Installed: the tests run.
 * - Missing under CI (`CI` set to anything but "" / "0" / "false"): the file FAILS with one test that says
 *   what to install. A CI run that silently skipped the real-node tests would report green without having
 *   tested anything against a real node; .ci/run installs the binaries and sets CI=true.
 * - Missing locally: the suite is skipped (vitest lists its tests as skipped) and a loud banner on stderr
 *   says how many tests did not run and how to install the binary.
 *
 * Usage in a test file:
 *   import { describeWithRealNode } from './support/real-node.ts';
 *   import { litecoind } from './support/litecoin-node.ts';
 *   describeWithRealNode('litecoin follow', litecoind, () => { beforeAll(...); it(...); });
 * or, for a file that is not one describe block: `if (requireRealNode('litecoind', litecoind.path !== undefined)) { ... }`.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

// vitest throws when imported outside a test run, and litecoin-node.ts (usable from scripts) imports this
// file for findBinary: load it only under vitest (which sets VITEST in its workers).
const vitest = process.env.VITEST ? { ...(await import('vitest')), ...(await import('vitest/suite')) } : undefined;

export interface RealNodeBinary {
  /** The executable's name, e.g. 'litecoind'. */
  name: string;
  /** Absolute path of the executable, undefined when it is not installed. */
  path: string | undefined;
  /** How to install it, for the failure message and the banner. */
  install: string;
}

export type RealNodePolicy = 'run' | 'skip' | 'fail';

/** Install hints of the binaries the tests use; .ci/run installs each of them. */
const INSTALL_HINTS: Readonly<Record<string, string>> = {
  litecoind: '.ci/run installs it with apt-get install -y litecoind (Debian package, Litecoin Core 0.21)',
  chromium: ".ci/run installs it with apt-get install -y chromium (Debian package; the console's browser tests drive it with playwright-core)",
  'python3-psycopg':
    ".ci/run installs it with apt-get install -y python3-psycopg (Debian package: psycopg 3 for Debian's /usr/bin/python3, which the Python receiver kit's test prefers)",
};

export function installHint(name: string): string {
  return INSTALL_HINTS[name] ?? `install ${name} (and add it to .ci/run)`;
}

/** True when `env` says this is a CI run (the usual `CI=true`; "", "0" and "false" count as unset). */
export function isCi(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env.CI?.trim().toLowerCase();
  return value !== undefined && value !== '' && value !== '0' && value !== 'false';
}

/** What to do with the real-node tests: run them, skip them (local run, binary missing) or fail (CI, binary missing). */
export function realNodePolicy(available: boolean, env: NodeJS.ProcessEnv = process.env): RealNodePolicy {
  if (available) return 'run';
  return isCi(env) ? 'fail' : 'skip';
}

/** `name` in $PATH (then /usr/bin, /usr/local/bin: a CI shell may have a minimal PATH); undefined when absent. */
export function findBinary(name: string, install = installHint(name), searchPath: string | undefined = process.env.PATH): RealNodeBinary {
  const dirs = [...(searchPath ?? '').split(delimiter).filter(Boolean), '/usr/bin', '/usr/local/bin'];
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return { name, path: candidate, install };
    } catch {
      // not here
    }
  }
  return { name, path: undefined, install };
}

export function missingMessage(binary: Pick<RealNodeBinary, 'name' | 'install'>): string {
  return `${binary.name} is not installed: ${binary.install}`;
}

/** The banner printed when a local run skips real-node tests. */
export function skipBanner(binary: Pick<RealNodeBinary, 'name' | 'install'>, title: string, tests: number | undefined): string {
  const what = tests === undefined ? 'its tests' : `${tests} test${tests === 1 ? '' : 's'}`;
  const line = '!'.repeat(100);
  return [
    line,
    `!!! ${missingMessage(binary)}`,
    `!!! SKIPPED "${title}": ${what} did not run against a real ${binary.name}.`,
    '!!! Under CI (CI=true) this is a failure.',
    line,
  ].join('\n');
}

/**
 * For files that are not one describe block: true when the tests can run; false (after the banner) when
 * they are to be skipped; throws under CI, which fails the file.
 */
export function requireRealNode(name: string, available: boolean, install = installHint(name)): boolean {
  const policy = realNodePolicy(available);
  if (policy === 'fail') throw new Error(missingMessage({ name, install }));
  if (policy === 'skip') console.warn(skipBanner({ name, install }, name, undefined));
  return policy === 'run';
}

/** `describe(title, fn)` when `binary` is installed; otherwise the policy above. */
export function describeWithRealNode(title: string, binary: RealNodeBinary, fn: () => void): void {
  if (!vitest) throw new Error('describeWithRealNode runs under vitest only');
  const { describe, it, getCurrentSuite } = vitest;
  const policy = realNodePolicy(binary.path !== undefined);
  if (policy === 'run') {
    describe(title, fn);
  } else if (policy === 'fail') {
    describe(title, () => {
      it(`${binary.name} is installed`, () => {
        throw new Error(missingMessage(binary));
      });
    });
  } else {
    describe.skip(title, () => {
      fn();
      // Tests registered directly in fn (nested describe blocks are collected later and not counted).
      const tests = getCurrentSuite().tasks.filter((task) => task.type === 'test').length;
      console.warn(skipBanner(binary, title, tests));
    });
  }
}
