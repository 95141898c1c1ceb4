// Bundles the extension (dist/extension.js), or with --tests the unit tests (out/unit/*.test.js),
// or with --e2e the end-to-end driver (out/e2e/run.js). `vscode` is never bundled: the editor
// provides it, and the unit tests must not load it (the logic under test takes a fake).
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';

const args = new Set(process.argv.slice(2));
const common = { bundle: true, platform: 'node', format: 'cjs', target: 'node20', sourcemap: true, logLevel: 'warning' };

if (args.has('--tests')) {
  const entries = readdirSync('test/unit')
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => `test/unit/${f}`);
  // No `external: ['vscode']`: a unit test that pulled in the real API would fail to bundle.
  // The TypeScript compiler (protocol.test.ts reads the mirror with it) loads from node_modules.
  await esbuild.build({ ...common, entryPoints: entries, outdir: 'out/unit', external: ['typescript'] });
} else if (args.has('--e2e')) {
  await esbuild.build({ ...common, entryPoints: ['test/e2e/run.ts'], outfile: 'out/e2e/run.js', external: ['playwright-core'] });
} else {
  const production = args.has('--production');
  await esbuild.build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    external: ['vscode'],
    minify: production,
    sourcemap: !production,
  });
}
