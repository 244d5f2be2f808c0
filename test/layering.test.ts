/**
 * The layering of src/ (docs/design/how-it-works.md, "Layout"), checked on every import of every module, type imports
 * and dynamic imports included, read with TypeScript's own parser (ts.preProcessFile). Test files are
 * left out: they may wire a real database under an adapter. A failure names the importing file and the
 * import.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');

interface Import {
  /** The importing file, relative to the repository (src/chains/pool.ts). */
  from: string;
  /** The import as written. */
  spec: string;
  /** The imported file relative to the repository, for an import of the project's own files. */
  to?: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

const imports: Import[] = sourceFiles(SRC).flatMap((file) => {
  const from = relative(ROOT, file);
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map(({ fileName: spec }) => ({
    from,
    spec,
    to: spec.startsWith('.') ? relative(ROOT, resolve(dirname(file), spec)) : undefined,
  }));
});

/** The folder of src/ a file belongs to ('chains'), or its name for a file at the top ('app.ts'). */
const layerOf = (path: string) => path.split('/')[1] as string;

/** The imports of files in `layer` (inside src/) that reach a file of src/ outside what `allowed` accepts. */
function offending(layer: string, allowed: (to: string, from: string) => boolean): string[] {
  return imports
    .filter((i) => layerOf(i.from) === layer && i.to?.startsWith('src/') && layerOf(i.to) !== layer && !allowed(i.to, i.from))
    .map((i) => `${i.from} imports '${i.spec}'`);
}

describe('layering of src/', () => {
  it('reads the imports (the check below sees every module)', () => {
    expect(imports.length).toBeGreaterThan(500);
    expect(imports.some((i) => i.from === 'src/app.ts' && i.to === 'src/chains/registry.ts')).toBe(true); // a dynamic import
  });

  it('domain/ and lib/ import nothing else of the project', () => {
    expect(offending('domain', () => false)).toEqual([]);
    expect(offending('lib', () => false)).toEqual([]);
  });

  it('chains/ imports only domain/ and lib/ (the registry also reads the configuration)', () => {
    expect(
      offending('chains', (to, from) => ['domain', 'lib'].includes(layerOf(to)) || (from === 'src/chains/registry.ts' && layerOf(to) === 'config')),
    ).toEqual([]);
  });

  it('matching/ imports only domain/, lib/ and chains/types.ts', () => {
    expect(offending('matching', (to) => ['domain', 'lib'].includes(layerOf(to)) || to === 'src/chains/types.ts')).toEqual([]);
  });

  it('store/ never imports api/, services/, ingest/ or delivery/', () => {
    expect(offending('store', (to) => !['api', 'services', 'ingest', 'delivery'].includes(layerOf(to)))).toEqual([]);
  });

  it('cli/ writes through services/, as the API does; it reaches the store only for what only the command line does', () => {
    /** The store modules the command line may import, each with its reason. */
    const commandLineOnly: Record<string, string> = {
      'src/store/db.ts': 'the database handle a command opens and passes to the services',
      'src/store/open.ts': 'opening the database for one command (embedded or DATABASE_URL)',
      'src/store/embedded.ts': 'the embedded PostgreSQL: herald backup and restore stop and start it',
      'src/store/backup.ts': 'herald backup and restore copy the whole database; no API does',
      'src/store/secret-box.ts': 'herald secrets re-encrypt: which key encrypts stored secrets',
      'src/store/subscriptions.ts': 'herald secrets re-encrypt: reencryptSecrets rewrites stored secrets under the new key; no API does',
    };
    expect(offending('cli', (to) => layerOf(to) !== 'store' || Object.hasOwn(commandLineOnly, to))).toEqual([]);
  });

  it('background waits come from src/lib/loop.ts: no other module writes its own sleep (issue 29: one loop helper)', () => {
    const ownSleep = /\bfunction sleep\b|\b(?:const|let) sleep\s*=|new Promise(?:<void>)?\(\(?(\w+)\)? => setTimeout\(\s*\1\s*,/;
    const writing = sourceFiles(SRC)
      .map((file) => relative(ROOT, file))
      .filter((path) => path !== 'src/lib/loop.ts' && ownSleep.test(readFileSync(join(ROOT, path), 'utf8')));
    expect(writing).toEqual([]);
  });

  it('no module imports anything outside the repository (../shared and the like)', () => {
    const outside = imports.filter((i) => i.to !== undefined && (i.to.startsWith('..') || /(^|\/)shared\//.test(i.spec)));
    expect(outside.map((i) => `${i.from} imports '${i.spec}'`)).toEqual([]);
  });

  it('has no import cycle, type imports included', () => {
    const edges = new Map<string, string[]>();
    for (const i of imports) {
      if (!i.to?.startsWith('src/')) continue;
      edges.set(i.from, [...(edges.get(i.from) ?? []), i.to]);
    }
    expect(cycles(edges).map((cycle) => cycle.join(' -> '))).toEqual([]);
  });
});

/** The cycles of the graph, one per strongly connected component (Tarjan), each from its first module back to it. */
function cycles(edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || edges.get(v)?.includes(v)) found.push([...component.reverse(), component[0] as string]);
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
}
