import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The layout's rules, read from the source itself: each failure names the file that breaks it.
 * A folder is a unit of src/: a top-level folder (db/, core/, render/ …, its sub-folders
 * included), one folder per verb (verbs/diff/) or broker (brokers/redis/), and each file at the
 * top of src/ on its own.
 */
const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return walk(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const FILES = walk(SRC).map((path) => ({ path, name: relative(SRC, path).split(sep).join('/') }));
const text = new Map(FILES.map((f) => [f.name, readFileSync(f.path, 'utf8')]));

function unitOf(name: string): string {
  const parts = name.split('/');
  if (parts.length === 1) return name;
  if ((parts[0] === 'verbs' || parts[0] === 'brokers') && parts.length > 2) return `${parts[0]}/${parts[1]}`;
  return parts[0]!;
}

/** Every relative import and re-export of a file, as src-relative names of the .ts files. */
function importsOf(name: string): string[] {
  const source = text.get(name) ?? '';
  const found: string[] = [];
  for (const match of source.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = join(dirname(name), match[1]!).split(sep).join('/').replace(/\.js$/, '.ts');
    found.push(target);
  }
  return found;
}

/** Each file of src/ with the .ts files it imports: the graph the import rules read (a test feeds its own). */
interface ImportGraphEntry {
  name: string;
  imports: readonly string[];
}
const GRAPH: ImportGraphEntry[] = FILES.map((f) => ({ name: f.name, imports: importsOf(f.name) }));

/** The verb folder a file lies in (verbs/diff/walk/x.ts → diff), if any. */
function verbOf(name: string): string | undefined {
  return /^verbs\/([^/]+)\//.exec(name)?.[1];
}

/** The verbs that drive the others (fault drills, the demo's tour): they may import other verbs. */
const DRIVING_VERBS = ['drill', 'demo'];

/** Imports from one verb folder into another, but for the verbs that drive the others. */
function crossVerbImports(graph: readonly ImportGraphEntry[]): string[] {
  return graph.flatMap(({ name, imports }) => {
    const from = verbOf(name);
    if (!from || DRIVING_VERBS.includes(from)) return [];
    return imports
      .filter((target) => verbOf(target) !== undefined && verbOf(target) !== from)
      .map((target) => `src/${name} imports src/${target}`);
  });
}

/** Imports into a verb folder from outside it that do not go through its index.ts. */
function importsPastVerbIndex(graph: readonly ImportGraphEntry[]): string[] {
  return graph.flatMap(({ name, imports }) =>
    imports
      .filter((target) => {
        const verb = verbOf(target);
        return verb !== undefined && verb !== verbOf(name) && target !== `verbs/${verb}/index.ts`;
      })
      .map((target) => `src/${name} imports src/${target}`),
  );
}

/** Imports from files under `from` into files under `into` (both src-relative folder prefixes). */
function importsInto(graph: readonly ImportGraphEntry[], from: string, into: string): string[] {
  return graph
    .filter(({ name }) => name.startsWith(from))
    .flatMap(({ name, imports }) =>
      imports
        .filter((target) => target.startsWith(into))
        .map((target) => `src/${name} imports src/${target}`),
    );
}

/** The source with comments blanked, so prose about SQL or chalk is not code. */
function stripComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

function code(name: string): string {
  return stripComments(text.get(name) ?? '');
}

/**
 * Branches on the database engine: reading an engine's name (`dialect.name`, `engine.name`),
 * comparing a DSN's kind, or comparing (or switching on) an engine's name as a string.
 */
const ENGINE_BRANCH = new RegExp(
  [
    String.raw`\b(dialect|engine)\??\.name\b`,
    String.raw`\b\w*dsn\??\.kind\s*[!=]==?`,
    String.raw`[!=]==?\s*\w*dsn\??\.kind\b`,
    String.raw`[!=]==?\s*['"\x60](mysql|sqlite|mariadb)['"\x60]`,
    String.raw`['"\x60](mysql|sqlite|mariadb)['"\x60]\s*[!=]==?`,
    String.raw`\bcase\s+['"\x60](mysql|sqlite|mariadb)['"\x60]\s*:`,
  ].join('|'),
  'i',
);

/** The engine branches of a source text (comments ignored), each as the line it is on. */
function engineBranches(source: string): string[] {
  return stripComments(source)
    .split('\n')
    .filter((line) => ENGINE_BRANCH.test(line))
    .map((line) => line.trim());
}

/** Where engine-specific code lives: one folder per engine and the registry that maps names to them. */
const ENGINE_HOME = 'db/engines/';

/** Each database driver, and the one engine folder that may load it. */
const DRIVER_HOMES: Record<string, string> = {
  mysql2: 'db/engines/mysql/',
  'better-sqlite3': 'db/engines/sqlite/',
  pg: 'db/engines/postgres/',
  'pg-cursor': 'db/engines/postgres/',
  'pg-copy-streams': 'db/engines/postgres/',
};

/** The database drivers a source text imports (statically or lazily) outside their engine's folder. */
function strayDrivers(name: string, source: string): string[] {
  const found: string[] = [];
  for (const match of stripComments(source).matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)) {
    const driver = match[1]!.split('/')[0]!;
    const home = DRIVER_HOMES[driver];
    if (home !== undefined && !name.startsWith(home)) found.push(match[1]!);
  }
  return found;
}

/** The one file that constructs Redis clients. */
const REDIS_FACTORY = 'brokers/redis/connection.ts';
const REDIS_CONSTRUCTION = /\bnew\s+(Redis|IORedis)\s*\(/;

function constructsRedis(source: string): boolean {
  return REDIS_CONSTRUCTION.test(stripComments(source));
}

/** One cycle through `start`, if the graph has one (depth first). */
function cycleThrough(edges: Map<string, Set<string>>, start: string): string[] | null {
  const seen = new Set<string>();
  const path: string[] = [];
  const visit = (node: string): string[] | null => {
    path.push(node);
    for (const next of [...(edges.get(node) ?? [])].sort()) {
      if (next === start) return [...path, start];
      if (!seen.has(next)) {
        seen.add(next);
        const found = visit(next);
        if (found) return found;
      }
    }
    path.pop();
    return null;
  };
  return visit(start);
}

/** A cycle for every node that lies on one, each cycle listed once. */
function findCycles(edges: Map<string, Set<string>>): string[][] {
  const cycles = new Map<string, string[]>();
  for (const node of [...edges.keys()].sort()) {
    const cycle = cycleThrough(edges, node);
    if (!cycle) continue;
    const key = [...new Set(cycle)].sort().join(' ');
    if (!cycles.has(key)) cycles.set(key, cycle);
  }
  return [...cycles.values()];
}

function findCycle(edges: Map<string, Set<string>>): string[] | null {
  return findCycles(edges)[0] ?? null;
}

/** SQL statements or clauses written out in a string; the keywords are upper case in this codebase. */
const SQL_TEXT = new RegExp(
  [
    String.raw`\bSELECT\s[\s\S]{0,200}?\sFROM\s`,
    String.raw`\bINSERT\s+(IGNORE\s+)?INTO\s`,
    String.raw`\bUPDATE\s+\S+\s+SET\s`,
    String.raw`\bDELETE\s+FROM\s`,
    String.raw`\b(CREATE|ALTER|DROP)\s+(TABLE|INDEX|DATABASE)\s`,
    String.raw`\sIS\s+(NOT\s+)?NULL\b`,
    String.raw`\sIN\s*\(\$\{…\}`,
    String.raw`\bWHERE\s`,
    String.raw`(\$\{…\}|\)|\?)\s+(AND|OR|LIKE)\s`,
    String.raw`\s(AND|OR|LIKE)\s+(\$\{…\}|\?|\(|')`,
  ].join('|'),
);

/**
 * Identifier quoting and the SQL pieces that travel without a statement around them: CASE WHEN,
 * backticks doubled (the escape inside a quoted identifier), `a`.`b`, and a keyword before a
 * backtick-quoted name. Backticks around words in messages (Markdown code) are not quoting.
 */
const IDENTIFIER_QUOTING = new RegExp(
  [
    String.raw`\bCASE\s+WHEN\s`,
    '``',
    '`[^`\\s]*`\\s*\\.\\s*`',
    String.raw`\b(FROM|JOIN|INTO|UPDATE|TABLE|BY|ON)\s+` + '`',
  ].join('|'),
);

/** Code (comments blanked) that quotes identifiers itself. */
const QUOTE_CALL = /\bquoteId\b/;

/** What writes SQL or quotes identifiers outside db/: literals with SQL or quoting, code calling quoteId. */
function sqlOutsideDb(
  files: ReadonlyArray<{ name: string; literals: readonly string[]; code: string }>,
): string[] {
  return files
    .filter((f) => !f.name.startsWith('db/'))
    .flatMap((f) => [
      ...f.literals
        .filter((literal) => SQL_TEXT.test(literal) || IDENTIFIER_QUOTING.test(literal))
        .map((literal) => `src/${f.name}: ${literal.slice(0, 80).replace(/\s+/g, ' ')}`),
      ...(QUOTE_CALL.test(f.code) ? [`src/${f.name}: quotes identifiers (quoteId)`] : []),
    ]);
}

/** The string and template literals of a file, read by the TypeScript parser (`${…}` for each substitution). */
function literals(name: string): string[] {
  const file = ts.createSourceFile(name, text.get(name) ?? '', ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) return;
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) found.push(node.text);
    else if (ts.isTemplateExpression(node))
      found.push(node.head.text + node.templateSpans.map((span) => '${…}' + span.literal.text).join(''));
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** The diff strategy a file belongs to (verbs/diff/join/, merge/ or checksum/), if any. */
const DIFF_STRATEGIES = ['join', 'merge', 'checksum'];
function strategyOf(name: string): string | undefined {
  const folder = /^verbs\/diff\/([^/]+)\//.exec(name)?.[1];
  return folder && DIFF_STRATEGIES.includes(folder) ? folder : undefined;
}

/** Imports of db/sql/ (the statements) from outside db/: everything above db/ goes through the port (db/port/). */
function statementImportOffenders(imports: ReadonlyArray<{ from: string; to: string }>): string[] {
  return imports
    .filter(({ from, to }) => to.startsWith('db/sql/') && !from.startsWith('db/'))
    .map(({ from, to }) => `src/${from} imports src/${to}`);
}

/** A relative import or re-export of a file: the src-relative .ts file it names, and whether only types come through. */
interface ModuleImport {
  to: string;
  typeOnly: boolean;
}

/**
 * The relative imports and re-exports of a source text, read by the TypeScript parser. Type-only:
 * `import type`, `export type`, named imports that are all `type`, and `import('…')` in a type;
 * a call of `import('…')` loads the module.
 */
function moduleImports(name: string, source: string): ModuleImport[] {
  const file = ts.createSourceFile(name, source, ts.ScriptTarget.Latest, true);
  const found: ModuleImport[] = [];
  const add = (specifier: ts.Node | undefined, typeOnly: boolean): void => {
    if (!specifier || !ts.isStringLiteral(specifier) || !specifier.text.startsWith('.')) return;
    const to = join(dirname(name), specifier.text).split(sep).join('/').replace(/\.js$/, '.ts');
    found.push({ to, typeOnly });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      const allTypes =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            bindings !== undefined &&
            ts.isNamedImports(bindings) &&
            bindings.elements.length > 0 &&
            bindings.elements.every((e) => e.isTypeOnly)));
      add(node.moduleSpecifier, allTypes);
    } else if (ts.isExportDeclaration(node)) {
      const clause = node.exportClause;
      const allTypes =
        node.isTypeOnly ||
        (clause !== undefined &&
          ts.isNamedExports(clause) &&
          clause.elements.length > 0 &&
          clause.elements.every((e) => e.isTypeOnly));
      add(node.moduleSpecifier, allTypes);
    } else if (ts.isImportTypeNode(node)) {
      const argument = node.argument;
      if (ts.isLiteralTypeNode(argument)) add(argument.literal, true);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node.arguments[0], false);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** What the console may take from db/ beyond types: the DSN masking of its error text. */
const CONSOLE_DB_ALLOWED = ['db/dsn.ts'];

/** The console calls verbs: anything but types it imports from db/ (the masking of dsn.ts aside). */
function consoleDbImports(imports: ReadonlyArray<{ from: string } & ModuleImport>): string[] {
  return imports
    .filter(({ from, to, typeOnly }) => from.startsWith('console/') && to.startsWith('db/') && !typeOnly)
    .filter(({ to }) => !CONSOLE_DB_ALLOWED.includes(to))
    .map(({ from, to }) => `src/${from} imports src/${to}`);
}

describe('the layout of src/', () => {
  it('has no import cycle between folders', () => {
    const edges = new Map<string, Set<string>>();
    for (const { name } of FILES) {
      const from = unitOf(name);
      for (const target of importsOf(name)) {
        const to = unitOf(target);
        if (to === from) continue;
        if (!edges.has(from)) edges.set(from, new Set());
        edges.get(from)!.add(to);
      }
    }
    const witness = (cycle: string[]) =>
      cycle
        .slice(0, -1)
        .map((unit, i) => {
          const next = cycle[i + 1]!;
          const file = FILES.find(
            (f) => unitOf(f.name) === unit && importsOf(f.name).some((t) => unitOf(t) === next),
          );
          return `${unit} → ${next} (src/${file?.name})`;
        })
        .join('; ');
    const found = findCycles(edges).map(witness);
    expect(found, `folder import cycles:\n${found.join('\n')}`).toEqual([]);
  });

  it('keeps core/ free of anything above it', () => {
    const offenders = FILES.filter((f) => f.name.startsWith('core/')).flatMap((f) =>
      importsOf(f.name)
        .filter((t) => !t.startsWith('core/'))
        .map((t) => `${f.name} imports ${t}`),
    );
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('keeps every command file at 110 lines or fewer', () => {
    const offenders = FILES.filter((f) => f.name.startsWith('commands/'))
      .map((f) => ({ name: f.name, lines: text.get(f.name)!.split('\n').length - 1 }))
      .filter((f) => f.lines > 110)
      .map((f) => `src/${f.name}: ${f.lines} lines`);
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('writes SQL and quotes identifiers only under db/', () => {
    const offenders = sqlOutsideDb(
      FILES.map((f) => ({ name: f.name, literals: literals(f.name), code: code(f.name) })),
    );
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('keeps each verb from importing another (but drill and demo, which drive them)', () => {
    const offenders = crossVerbImports(GRAPH);
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('enters a verb from outside only through its index.ts', () => {
    const offenders = importsPastVerbIndex(GRAPH);
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('keeps the shared operations (ops/) below the verbs', () => {
    const offenders = importsInto(GRAPH, 'ops/', 'verbs/');
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('imports chalk and cli-table3 only in render/', () => {
    const offenders = FILES.filter((f) => !f.name.startsWith('render/'))
      .filter((f) =>
        /from\s+['"](chalk|cli-table3)['"]|import\(\s*['"](chalk|cli-table3)['"]/.test(code(f.name)),
      )
      .map((f) => `src/${f.name}`);
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('branches on the database engine only under db/engines/', () => {
    const offenders = FILES.filter((f) => !f.name.startsWith(ENGINE_HOME)).flatMap((f) =>
      engineBranches(text.get(f.name) ?? '').map((line) => `src/${f.name}: ${line}`),
    );
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('loads each database driver only in its engine folder', () => {
    const offenders = FILES.flatMap((f) =>
      strayDrivers(f.name, text.get(f.name) ?? '').map((driver) => `src/${f.name} imports ${driver}`),
    );
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it(`constructs Redis clients only in src/${REDIS_FACTORY}`, () => {
    const offenders = FILES.filter((f) => f.name !== REDIS_FACTORY)
      .filter((f) => constructsRedis(text.get(f.name) ?? ''))
      .map((f) => `src/${f.name}`);
    expect(offenders, offenders.join('\n')).toEqual([]);
    expect(constructsRedis(text.get(REDIS_FACTORY) ?? '')).toBe(true);
  });

  it('gives every file over 300 lines a one-line reason at its top', () => {
    const offenders = FILES.map((f) => ({ name: f.name, source: text.get(f.name)! }))
      .filter((f) => f.source.split('\n').length - 1 > 300)
      .filter((f) => !/^\/\/ (Over|Longer than) 300 lines: \S.{10,}/.test(f.source))
      .map(
        (f) =>
          `src/${f.name}: ${f.source.split('\n').length - 1} lines, no "// Over 300 lines: <reason>" first line`,
      );
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it("keeps diff's strategies (join/, merge/, checksum/) from importing one another", () => {
    const offenders = FILES.flatMap((f) => {
      const from = strategyOf(f.name);
      if (!from) return [];
      return importsOf(f.name)
        .filter((target) => strategyOf(target) !== undefined && strategyOf(target) !== from)
        .map((target) => `src/${f.name} imports src/${target}`);
    });
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('imports db/sql/ only from inside db/ (the rest goes through the storage port)', () => {
    const offenders = statementImportOffenders(
      FILES.flatMap((f) => importsOf(f.name).map((to) => ({ from: f.name, to }))),
    );
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('keeps the console on verbs: from db/ it imports types only (and dsn.ts for masking)', () => {
    const offenders = consoleDbImports(
      FILES.flatMap((f) =>
        moduleImports(f.name, text.get(f.name) ?? '').map((i) => ({ from: f.name, ...i })),
      ),
    );
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('can fail: each rule flags a planted case', () => {
    expect(SQL_TEXT.test('SELECT id FROM ${…} WHERE x = ?')).toBe(true);
    expect(SQL_TEXT.test('${…} IN (${…})')).toBe(true);
    expect(SQL_TEXT.test('Select the rows you want to keep')).toBe(false);
    expect(SQL_TEXT.test('Only tasks whose error matches this LIKE pattern with %.')).toBe(false);
    expect(SQL_TEXT.test("${…} LIKE 'x%'")).toBe(true);
    expect(
      findCycle(
        new Map([
          ['a', new Set(['b'])],
          ['b', new Set(['a'])],
        ]),
      ),
    ).toEqual(['a', 'b', 'a']);
    expect(
      findCycle(
        new Map([
          ['a', new Set(['b'])],
          ['b', new Set(['c'])],
        ]),
      ),
    ).toBeNull();
    expect(unitOf('verbs/diff/plan.ts')).toBe('verbs/diff');
    expect(unitOf('db/sql/scan.ts')).toBe('db');
    expect(strategyOf('verbs/diff/checksum/row-level.ts')).toBe('checksum');
    expect(strategyOf('verbs/diff/walk/workers.ts')).toBeUndefined();
    expect(engineBranches("if (db.dialect.name === 'mysql') return 0;")).toHaveLength(1);
    expect(engineBranches('return source.db.engine.name;')).toHaveLength(1);
    expect(engineBranches('if (dsn.kind === other) open();')).toHaveLength(1);
    expect(engineBranches("const sqlite = parseDsn(text).kind === 'sqlite';")).toHaveLength(1);
    expect(engineBranches('if (clock.engine !== "mariadb") warn();')).toHaveLength(1);
    expect(engineBranches("switch (name) {\n  case 'sqlite':\n    return 1;\n}")).toHaveLength(1);
    expect(engineBranches("if ('mysql' === flavour) hint();")).toHaveLength(1);
    expect(engineBranches("// on MySQL, dialect.name === 'mysql' was the old way\nconst x = 1;")).toEqual([]);
    expect(engineBranches("if (db.engine.embedded) return 'SQLite';")).toEqual([]);
    expect(
      strayDrivers('db/connect.ts', "const { default: Database } = await import('better-sqlite3');"),
    ).toEqual(['better-sqlite3']);
    expect(strayDrivers('db/engines/sqlite/db.ts', "import mysql from 'mysql2/promise';")).toEqual([
      'mysql2/promise',
    ]);
    expect(strayDrivers('db/engines/mysql/db.ts', "import mysql from 'mysql2/promise';")).toEqual([]);
    expect(constructsRedis('const client = new Redis(url, { lazyConnect: true });')).toBe(true);
    expect(constructsRedis('const c = new IORedis(url);')).toBe(true);
    expect(
      constructsRedis('/* new Redis(url) is made by the factory */ createRedisClient(url, {}, log);'),
    ).toBe(false);
    expect(
      statementImportOffenders([
        { from: 'verbs/redrive/feed.ts', to: 'db/sql/claims.ts' },
        { from: 'verbs/redrive/feed.ts', to: 'db/port/index.ts' },
        { from: 'db/sql-store.ts', to: 'db/sql/claims.ts' },
      ]),
    ).toEqual(['src/verbs/redrive/feed.ts imports src/db/sql/claims.ts']);

    // The console reaching the storage port (or any of db/ but dsn.ts) for more than types.
    expect(
      moduleImports(
        'console/routes/x.ts',
        [
          "import { store, type ListCursor } from '../../db/port/index.js';",
          "import type { BoundSource } from '../../db/bind-source.js';",
          "import { type Fragment } from '../../db/fragment.js';",
          "export { and } from '../../db/fragment.js';",
          "export type { Db } from '../../db/types.js';",
          "let t: typeof import('../../db/task-sql.js').toIso;",
          "const m = await import('../../db/connect.js');",
        ].join('\n'),
      ).map((i) => `${i.to}${i.typeOnly ? ' (types)' : ''}`),
    ).toEqual([
      'db/port/index.ts',
      'db/bind-source.ts (types)',
      'db/fragment.ts (types)',
      'db/fragment.ts',
      'db/types.ts (types)',
      'db/task-sql.ts (types)',
      'db/connect.ts',
    ]);
    expect(
      consoleDbImports([
        { from: 'console/routes/pages.ts', to: 'db/port/index.ts', typeOnly: false },
        { from: 'console/filters.ts', to: 'db/fragment.ts', typeOnly: false },
        { from: 'console/deps.ts', to: 'db/bind-source.ts', typeOnly: true },
        { from: 'console/bulk.ts', to: 'db/dsn.ts', typeOnly: false },
        { from: 'console/pages/list.ts', to: 'verbs/scan/index.ts', typeOnly: false },
        { from: 'verbs/scan/list-page.ts', to: 'db/port/index.ts', typeOnly: false },
      ]),
    ).toEqual([
      'src/console/routes/pages.ts imports src/db/port/index.ts',
      'src/console/filters.ts imports src/db/fragment.ts',
    ]);

    // One verb into another: flagged, but not from the verbs that drive the others.
    expect(
      crossVerbImports([
        { name: 'verbs/sweep/retry.ts', imports: ['verbs/compensate/index.ts', 'verbs/sweep/plan.ts'] },
        { name: 'verbs/drill/system.ts', imports: ['verbs/redrive/index.ts'] },
        { name: 'verbs/diff/walk/x.ts', imports: ['verbs/diff/plan.ts', 'ops/rows.ts'] },
      ]),
    ).toEqual(['src/verbs/sweep/retry.ts imports src/verbs/compensate/index.ts']);

    // Past a verb's index: flagged from commands, the console, other layers and the driving verbs alike.
    expect(
      importsPastVerbIndex([
        { name: 'commands/diff.ts', imports: ['verbs/diff/index.ts', 'verbs/diff/enqueue-confirm.ts'] },
        { name: 'verbs/drill/effect-check.ts', imports: ['verbs/diff/plan.ts'] },
        { name: 'verbs/diff/run.ts', imports: ['verbs/diff/plan.ts'] },
      ]),
    ).toEqual([
      'src/commands/diff.ts imports src/verbs/diff/enqueue-confirm.ts',
      'src/verbs/drill/effect-check.ts imports src/verbs/diff/plan.ts',
    ]);

    // The shared layer reaching up into a verb.
    expect(
      importsInto(
        [
          { name: 'ops/rows.ts', imports: ['verbs/compensate/index.ts', 'db/task-sql.ts'] },
          { name: 'verbs/sweep/plan.ts', imports: ['verbs/compensate/index.ts'] },
        ],
        'ops/',
        'verbs/',
      ),
    ).toEqual(['src/ops/rows.ts imports src/verbs/compensate/index.ts']);

    // SQL and identifier quoting outside db/; Markdown code in messages is not quoting.
    expect(
      sqlOutsideDb([
        { name: 'verbs/diff/prepare.ts', literals: ['CASE WHEN ${…} THEN 1 ELSE 0 END'], code: '' },
        { name: 'verbs/doctor/schema.ts', literals: [], code: 'source.db.dialect.quoteId(model.column)' },
        { name: 'verbs/x.ts', literals: ['`${…}`.`${…}`', 'SELECT 1 FROM `${…}`', '``'], code: '' },
        { name: 'render/x.ts', literals: ['Run `${…}` to see every change', '`'], code: '' },
        { name: 'db/sql/x.ts', literals: ['CASE WHEN ${…} THEN 1 END'], code: 'dialect.quoteId(name)' },
      ]),
    ).toEqual([
      'src/verbs/diff/prepare.ts: CASE WHEN ${…} THEN 1 ELSE 0 END',
      'src/verbs/doctor/schema.ts: quotes identifiers (quoteId)',
      'src/verbs/x.ts: `${…}`.`${…}`',
      'src/verbs/x.ts: SELECT 1 FROM `${…}`',
      'src/verbs/x.ts: ``',
    ]);
  });
});
