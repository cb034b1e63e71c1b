// Builds the extension bundle (client/out/extension.js) or, with --tests, the unit tests (client/out/test/*.test.js).
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const tests = process.argv.includes('--tests');
const common = { bundle: true, platform: 'node', format: 'cjs', target: 'node20', sourcemap: false, logLevel: 'warning' };

if (tests) {
  const dir = join(here, 'test');
  await build({
    ...common,
    entryPoints: readdirSync(dir).filter(f => f.endsWith('.test.ts')).map(f => join(dir, f)),
    outdir: join(here, 'out', 'test'),
    external: ['vscode'],
  });
} else {
  await build({
    ...common,
    entryPoints: [join(here, 'src', 'extension.ts')],
    outfile: join(here, 'out', 'extension.js'),
    external: ['vscode'],
    minify: true,
    sourcemap: 'linked',
    sourcesContent: false,
  });
}
