/**
 * Build of the web console: Preact components compiled by esbuild (no Babel, no preset plugin), bundled
 * by Vite into ../dist/console with content-hashed file names under assets/, served by herald at
 * /console (src/api/console-assets.ts). Run by `npm run build`, which `npm install` runs (prepare).
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  // The console imports the chains vocabulary from ../src/domain (pure data, no I/O).
  server: { fs: { allow: ['..'] } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // One request for the whole program: it is small (see the budget in the README), and a second
    // round trip would cost more than the bytes saved.
    modulePreload: false,
    reportCompressedSize: true,
    chunkSizeWarningLimit: 200,
  },
});
