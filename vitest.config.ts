import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Test files that start many processes and measure how fast they recover (six herald processes and a
 * PostgreSQL restart; a follower racing hundreds of subscriptions): run after the parallel pass, one at a
 * time (`HERALD_TEST_SOLO=1`, as `npm test` does), so that the other files' load does not decide their
 * timings. Named on the command line (`npx vitest run test/topology.test.ts`), they run as usual.
 */
const SOLO = ['test/topology.test.ts', 'test/subscribe-race.test.ts'];
const solo = process.env.HERALD_TEST_SOLO === '1';

/**
 * Left out of CI's second pass against another PostgreSQL server (HERALD_TEST_SERVER_PASS=1, .ci/run): files
 * whose outcome cannot depend on that server, so that the pass checks the server and repeats nothing.
 */
const SERVER_INDEPENDENT = [
  'test/cli.test.ts', // starts herald on its own embedded PostgreSQL whatever DATABASE_URL says
  'test/embedded.test.ts', // the embedded PostgreSQL itself
  'test/backup.test.ts', // its own embedded PostgreSQL
  'test/console-browser.test.ts', // the console in a browser: its API calls are the API tests' calls
  'test/docs.test.ts', // no database
  'test/layering.test.ts', // no database
  'test/conformance.test.ts', // no database
];
const serverPass = process.env.HERALD_TEST_SERVER_PASS === '1';
const named = process.argv.some((arg) => SOLO.some((file) => file.endsWith(arg.replace(/^\.\//, ''))));

export default defineConfig({
  test: {
    include: solo ? SOLO : ['src/**/*.test.ts', 'test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    exclude: solo || named ? configDefaults.exclude : [...configDefaults.exclude, ...SOLO, ...(serverPass ? SERVER_INDEPENDENT : [])],
    fileParallelism: !solo,
    // Test files share one embedded PostgreSQL (started in globalSetup); files run in parallel workers.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    // Under CI (CI=true, .ci/run) a failed test is run once more before the run fails. The suite drives real
    // nodes, processes and a shared PostgreSQL on a 2-core machine, and three landings were lost to a single
    // timing flake each; a test that fails twice still fails the run. A test that passed only on its retry is
    // named in the output ("retry x1") and is a defect to fix (docs/development.md).
    retry: process.env.CI === 'true' ? 1 : 0,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time by default. Vitest's own default is one fewer than the cores, which on a 2-core
    // machine runs the files one after another and leaves the second core mostly to PostgreSQL; two at a
    // time did 1.28 seconds of file time per second on a quiet 2-core machine (the suite is then CPU-bound,
    // so more workers do not help there). HERALD_TEST_WORKERS overrides it.
    maxWorkers: solo ? 1 : Number(process.env.HERALD_TEST_WORKERS ?? 2),
    minWorkers: 1,
  },
});
