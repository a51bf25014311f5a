/**
 * Refuses `import(expr)` (and `require(expr)`) whose specifier is not a string literal in product code.
 * dependency-cruiser (.dependency-cruiser.cjs) sees every import with a literal specifier, dynamic ones
 * included; a specifier held in a variable is invisible to it, which is how envs/ once reached into
 * server/ unnoticed. The few legitimate cases are allowed below, each by file and exact expression.
 * Run: `npx tsx scripts/dynamic-imports.ts` (part of `npm run depcheck`); exit 1 on a finding.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** Product code, as in .dependency-cruiser.cjs (PRODUCT). */
export const PRODUCT_DIRS = ['protocol/src', 'sandbox-contract', 'envs/src', 'server/src', 'clients/ts/src', 'bin'];

export interface AllowedDynamicImport {
  file: string;
  /** The argument's source text, exactly. */
  expr: string;
  why: string;
}

export const ALLOWED: readonly AllowedDynamicImport[] = [
  {
    file: 'envs/src/module-loader.ts',
    expr: 'pathToFileURL(abs).href',
    why: "`--env-module <path>` loads the user's own env module; its path is only known at run time",
  },
  {
    file: 'clients/ts/src/socket.ts',
    expr: 'spec',
    why: "the npm package 'ws' (not our code), held in a variable so browser bundlers do not inline ws's throwing stub",
  },
  {
    file: 'envs/src/code/harness/node/worker.mjs',
    expr: 'pathToFileURL(path.join(WORKSPACE, rel)).href',
    why: "the grading worker runs inside the sandbox, as the agent uid, and loads the submission's module that a hidden test names; it is never imported by the server",
  },
];

export interface Finding {
  file: string;
  line: number;
  call: 'import' | 'require';
  expr: string;
}

const SOURCE = /\.(c|m)?(t|j)sx?$/;
const SKIP_DIRS = new Set(['node_modules', 'dist']);

function listSources(root: string, dir: string): string[] {
  const out: string[] = [];
  let entries;
  try {
    entries = readdirSync(join(root, dir), { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) out.push(...listSources(root, rel));
    } else if (SOURCE.test(e.name) && !e.name.endsWith('.d.ts')) {
      out.push(rel);
    }
  }
  return out;
}

function isLiteral(node: ts.Node | undefined): boolean {
  return node !== undefined && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node));
}

/** Every import()/require() in `text` whose specifier is not a plain string literal. */
export function findInSource(file: string, text: string): Finding[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Finding[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const call =
        node.expression.kind === ts.SyntaxKind.ImportKeyword
          ? 'import'
          : ts.isIdentifier(node.expression) && node.expression.text === 'require'
            ? 'require'
            : null;
      const arg = node.arguments[0];
      if (call && !isLiteral(arg)) {
        found.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, call, expr: arg ? arg.getText(sf) : '' });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Findings under `dirs` of `root`, split into allowed and violations; `stale` lists allow-list entries that match nothing. */
export function scan(root: string, dirs: readonly string[] = PRODUCT_DIRS, allowed: readonly AllowedDynamicImport[] = ALLOWED) {
  const all = dirs.flatMap((d) => listSources(root, d)).flatMap((f) => findInSource(f, readFileSync(join(root, f), 'utf8')));
  const isAllowed = (f: Finding) => allowed.some((a) => a.file === f.file && a.expr === f.expr);
  return {
    violations: all.filter((f) => !isAllowed(f)),
    allowed: all.filter(isAllowed),
    stale: allowed.filter((a) => !all.some((f) => f.file === a.file && f.expr === a.expr)),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(fileURLToPath(import.meta.url), '..', '..');
  const r = scan(root);
  for (const v of r.violations) {
    process.stderr.write(
      `  error no-non-literal-dynamic-import: ${v.file.split(sep).join('/')}:${v.line} ${v.call}(${v.expr}) — a module path held in a variable hides the dependency from the checker; import a literal path, or inject the dependency (see docs/ARCHITECTURE.md)\n`,
    );
  }
  for (const s of r.stale) process.stderr.write(`  error stale allow-list entry in scripts/dynamic-imports.ts: ${s.file} import(${s.expr}) no longer exists\n`);
  const bad = r.violations.length + r.stale.length;
  if (bad > 0) {
    process.stderr.write(`\nx ${bad} dynamic-import problem(s)\n`);
    process.exit(1);
  }
  process.stdout.write(
    `✔ no non-literal dynamic imports in product code (${r.allowed.length} allowed: ${[...new Set(r.allowed.map((a) => relative('.', a.file)))].join(', ')})\n`,
  );
}
