import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// `npm run test:browser`: the tests that drive a real Chromium (/usr/bin/chromium), and only those.
export default defineConfig({ ...base, test: { ...base.test, include: ['test/browser/**/*.browser.ts'] } });
