import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // examples/ import the package by name, as a user would; tests run them against the source.
  resolve: {
    alias: [
      { find: /^gamewire\/state$/, replacement: fileURLToPath(new URL('./src/state/index.ts', import.meta.url)) },
      { find: /^gamewire\/testing$/, replacement: fileURLToPath(new URL('./src/testing.ts', import.meta.url)) },
      { find: /^gamewire\/node$/, replacement: fileURLToPath(new URL('./src/node.ts', import.meta.url)) },
      { find: /^gamewire$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
    ],
  },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'examples/**/*.test.ts'],
    // One fast-check seed for every property; FC_SEED=<int> replays one, FC_SEED=random explores.
    setupFiles: ['test/setup/fast-check.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
