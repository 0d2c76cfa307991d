import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // One temporary directory per run, removed at the end (test/global-setup.ts).
    globalSetup: ['test/global-setup.ts'],
  },
});
