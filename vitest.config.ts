import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Test files that start many processes and measure how fast they recover (six herald processes and a
 * PostgreSQL restart; a follower racing hundreds of subscriptions): run after the parallel pass, one at a
 * time (`HERALD_TEST_SOLO=1`, as `npm test` does), so that the other files' load does not decide their
 * timings. Named on the command line (`npx vitest run test/topology.test.ts`), they run as usual.
 */
const SOLO = ['test/topology.test.ts', 'test/subscribe-race.test.ts'];
const solo = process.env.HERALD_TEST_SOLO === '1';
const named = process.argv.some((arg) => SOLO.some((file) => file.endsWith(arg.replace(/^\.\//, ''))));

export default defineConfig({
  test: {
    include: solo ? SOLO : ['src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: solo || named ? configDefaults.exclude : [...configDefaults.exclude, ...SOLO],
    fileParallelism: !solo,
    // Test files share one embedded PostgreSQL (started in globalSetup); files run in parallel workers.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
