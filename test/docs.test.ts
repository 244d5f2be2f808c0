/**
 * The documentation cannot drift from the code (docs/README.md): every relative link and #anchor in
 * README.md and docs/ leads somewhere, and every file of the repository they name exists; docs/reference/cli.md names every command of the commander
 * program; docs/reference/configuration.md names every key of the configuration schema and every
 * environment variable config.ts reads; docs/reference/metrics.md names every metric; the README's chain
 * and event matrix is EVENT_BLOCKCHAINS. No database, no server: it reads files and builds objects.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../src/cli/program.ts';
import { ConfigSchema } from '../src/config/config.ts';
import { BLOCKCHAINS, EVENT_BLOCKCHAINS, type EventType } from '../src/domain/chains.ts';
import { ENDPOINT_NAMES } from '../src/domain/endpoints.ts';
import { createMetrics } from '../src/metrics.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

function markdownFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}
const PAGES = ['README.md', ...markdownFiles('docs')];

/** The text outside fenced code blocks and inline code spans, where links mean links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/``[^`\n]+``|`[^`\n]+`/g, '');
}

/** `[text](target)` and `![alt](target)` in a page, with the line each is on. */
function linksOf(markdown: string): { target: string; line: number }[] {
  const text = prose(markdown);
  const links: { target: string; line: number }[] = [];
  for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    links.push({ target: match[1] as string, line: text.slice(0, match.index).split('\n').length });
  }
  return links;
}

/**
 * The anchors GitHub gives a page's headings: the heading's text without its markup, lower case, without
 * punctuation but hyphens and underscores, spaces as hyphens; a repeated one gets -1, -2, ... Also any
 * `<a id="...">` or `<a name="...">` in the page.
 */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutCode = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const match of withoutCode.matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const text = (match[1] as string)
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
      .replace(/[`*]/g, '');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const match of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1] as string);
  return anchors;
}

describe('links and anchors in README.md and docs/', () => {
  it('finds the pages', () => {
    expect(PAGES).toContain('docs/README.md');
    expect(PAGES.length).toBeGreaterThan(20);
  });

  it('every relative link leads to a file of the repository, and every #anchor to a heading there', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      for (const { target, line } of linksOf(read(page))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not ours to check
        const [path = '', anchor] = target.split('#', 2);
        const file = path === '' ? join(ROOT, page) : resolve(join(ROOT, dirname(page)), decodeURIComponent(path));
        const where = `${page}:${line} -> ${target}`;
        if (!file.startsWith(`${ROOT}/`) || relative(ROOT, file).startsWith('node_modules')) {
          broken.push(`${where}: outside the repository`);
          continue;
        }
        if (!existsSync(file)) {
          broken.push(`${where}: no such file`);
          continue;
        }
        if (anchor === undefined) continue;
        if (statSync(file).isDirectory() || !file.endsWith('.md')) {
          broken.push(`${where}: an anchor into something that is not a Markdown page`);
        } else if (!anchorsOf(readFileSync(file, 'utf8')).has(anchor)) {
          broken.push(`${where}: no heading gives #${anchor}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('every file of the repository a page names (`src/...`, `test/...`, `bench/...`, ...) exists', () => {
    const missing: string[] = [];
    for (const page of PAGES) {
      const text = read(page);
      const named = [
        ...[...text.matchAll(/`((?:src|test|bench|scripts|deploy|console|examples|bin)\/[^`\s]+)`/g)].map((m) => m[1] as string),
        ...[...text.matchAll(/[\s(]((?:src|test|bench|scripts)\/[\w./-]+\.(?:ts|tsx|sql|md|json))/g)].map((m) => m[1] as string),
      ];
      for (const path of named) {
        if (/[*<>{}]/.test(path)) continue; // a pattern, not a file
        if (!existsSync(join(ROOT, path.replace(/[.,;:]+$/, '')))) missing.push(`${page}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('the anchor rules are GitHub’s', () => {
    const anchors = anchorsOf(
      '# Several processes (tested topology)\n## `x-callback-sequence`: order\n## Callback order\n## Callback order\n```sh\n# not a heading\n```\n## [Link](a.md) and *stress*_x\n',
    );
    expect([...anchors]).toEqual(['several-processes-tested-topology', 'x-callback-sequence-order', 'callback-order', 'callback-order-1', 'link-and-stress_x']);
  });
});

describe('the README and what a clone cites (issue 31)', () => {
  it('README.md has at most 200 lines, and its install section shows the three ways in: a clone, the package, the container', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
    const install = /^## Install\b[^\n]*\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1] ?? '';
    expect(install).toContain('npm start');
    expect(install).toMatch(/npm install --omit=dev \S+\.tgz/);
    expect(install).toMatch(/docker build /);
  });

  it('no page, source, test or script cites the documents outside the repository (a shared docs folder beside the clone)', () => {
    const needle = ['shared', 'docs'].join('/');
    const files = (dir: string): string[] =>
      readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'fixtures' ? [] : files(path);
        return /\.(ts|mjs|js|md|sh|py|go|sql|json|ya?ml)$/.test(entry.name) ? [path] : [];
      });
    const citing = ['README.md', 'CHANGELOG.md', ...['src', 'docs', 'test', 'bench', 'scripts', 'examples', 'deploy'].flatMap(files)].filter((path) =>
      read(path).includes(needle),
    );
    expect(citing).toEqual([]);
  });
});

describe('the references name what the code has', () => {
  it('docs/reference/cli.md shows every command of the herald program, and no command it does not have', () => {
    const commands: string[] = [];
    const walk = (command: Command, prefix: string) => {
      for (const sub of command.commands) {
        const name = `${prefix} ${sub.name()}`;
        if (sub.commands.length === 0) commands.push(name);
        else walk(sub, name);
      }
    };
    walk(buildProgram(), 'herald');
    expect(commands.length).toBeGreaterThan(15);
    const cli = read('docs/reference/cli.md');
    expect(commands.filter((command) => !cli.includes(command))).toEqual([]);
    // Each usage line of the page is a command the program has (a removed command leaves the page too).
    const usage = [...cli.matchAll(/^herald ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?/gm)].map((m) => (m[2] ? `herald ${m[1]} ${m[2]}` : `herald ${m[1]}`));
    expect(usage.length).toBeGreaterThan(15);
    expect(usage.filter((line) => !commands.includes(line))).toEqual([]);
  });

  it('docs/reference/configuration.md names every configuration key (as `key.path`) and every environment variable', () => {
    const keys: string[] = [];
    type Schema = { type?: string; properties?: Record<string, Schema>; items?: Schema; anyOf?: Schema[] };
    const walk = (schema: Schema, path: string) => {
      for (const [name, child] of Object.entries(schema.properties ?? {})) {
        const key = path === '' ? name : `${path}.${name}`;
        if (child.type === 'object' && child.properties)
          walk(child, key); // a section: its keys are named
        else keys.push(key);
        if (child.type === 'array' && child.items?.type === 'object') walk(child.items, `${key}[]`);
      }
    };
    walk(ConfigSchema as unknown as Schema, '');
    expect(keys).toContain('chains[].rpcUrl');
    expect(keys).toContain('costs.transactionMined');
    const page = read('docs/reference/configuration.md');
    expect(keys.filter((key) => !page.includes(`\`${key}\``))).toEqual([]);

    const variables = new Set(
      [...read('src/config/config.ts').matchAll(/\b(HERALD_[A-Z0-9_]+|DATABASE_URL)\b/g)]
        .map((m) => m[1] as string)
        .filter((name) => !name.startsWith('HERALD_TEST_')), // the test suite's, not settings
    );
    expect(variables.size).toBeGreaterThan(20);
    // HERALD_RPC_ and its kin are prefixes: the page writes them HERALD_RPC_<BLOCKCHAIN>_<NETWORK>.
    expect([...variables].filter((name) => !page.includes(name))).toEqual([]);
  });

  it('the API keys section names every endpoint name `herald keys create --allow` takes', () => {
    const page = read('docs/concepts/tenants-and-credits.md');
    const section = page.slice(page.indexOf('## API keys'), page.indexOf('\n## ', page.indexOf('## API keys') + 1));
    const named = new Set(section.match(/[a-z]+(?:-[a-z]+)*/g));
    expect(ENDPOINT_NAMES.filter((name) => !named.has(name))).toEqual([]);
  });

  it('docs/benchmarks.md names every benchmark of npm run bench (bench/run.ts)', () => {
    const names = [...read('bench/run.ts').matchAll(/^\s+'?([a-z][a-z0-9-]*)'?: \(\) => import\(/gm)].map((m) => m[1] as string);
    expect(names.length).toBeGreaterThan(15);
    const page = read('docs/benchmarks.md');
    expect(names.filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
  });

  it('docs/reference/metrics.md names every metric herald registers', () => {
    const defaults = new Registry();
    collectDefaultMetrics({ register: defaults, prefix: 'herald_' });
    const nodeDefaults = new Set(defaults.getMetricsAsArray().map((metric) => metric.name));
    const names = createMetrics()
      .registry.getMetricsAsArray()
      .map((metric) => metric.name)
      .filter((name) => !nodeDefaults.has(name));
    expect(names.length).toBeGreaterThan(20);
    const page = read('docs/reference/metrics.md');
    expect(names.filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
  });

  it("the README's chain and event matrix is the code's (EVENT_BLOCKCHAINS)", () => {
    const readme = read('README.md');
    const header = readme.split('\n').find((line) => line.startsWith('| Event (create endpoint) |')) ?? '';
    const columns = header
      .split('|')
      .slice(2, -1)
      .map((cell) => cell.trim());
    const legend = Object.fromEntries(
      [...readme.matchAll(/\b([A-Z]{3,4}) ([a-z-]+)\b/g)].filter((m) => columns.includes(m[1] as string)).map((m) => [m[1], m[2]]),
    );
    expect(columns.map((column) => legend[column]).sort()).toEqual([...BLOCKCHAINS].sort());
    const rows = readme.split('\n').filter((line) => /^\| `[A-Z_]+`/.test(line));
    const documented = Object.fromEntries(
      rows.map((row) => {
        const cells = row
          .split('|')
          .slice(1, -1)
          .map((cell) => cell.trim());
        const event = /`([A-Z_]+)`/.exec(cells[0] ?? '')?.[1] as EventType;
        return [event, columns.filter((_, i) => cells[i + 1] === '✓').map((column) => legend[column])];
      }),
    );
    const expected = Object.fromEntries(Object.entries(EVENT_BLOCKCHAINS).map(([event, chains]) => [event, [...chains]]));
    for (const chains of [...Object.values(documented), ...Object.values(expected)]) chains.sort();
    expect(documented).toEqual(expected);
  });
});
