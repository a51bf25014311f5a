// The repository side of the degenerate battery without Docker (the graded side is test/integrity/repo-validate.test.ts):
// the variants of envs/test/fixtures/repo-degenerate/ages-raise-pays derived from its reference, and the captures they
// submit, read back through the judge's own composeGradingTree (what the grading tree would hold).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { degenerateVariants, variantFiles } from '../../src/code/degenerate.js';
import { loadTaskSets } from '../../src/code/task-loader.js';
import { composeGradingTree } from '../../src/repo/repo-grade.js';
import { goBodyVariants } from '../../src/repo/repo-degenerate-go.js';
import { repoExtraVariants, repoVariantCapture } from '../../src/repo/repo-validate.js';
import type { CapturedEntry } from '../../src/workspace/capture.js';

const SET = fileURLToPath(new URL('../fixtures/repo-degenerate/', import.meta.url));
const text = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString('utf8') : undefined);

describe('degenerate battery: repository variants', async () => {
  const [task] = await loadTaskSets([SET]);
  if (!task?.repo) throw new Error('fixture is not a repository task');
  // The reference run's workspace: the base tree with the fix's files written (as applySolution + capture leave it).
  const fixed = new Map(task.solution.files.map((f) => [f.path, f.content]));
  const refFiles = task.workspace.map((f) => ({ path: f.path, mode: f.mode, content: fixed.get(f.path) ?? f.content }));
  const dirs = [
    ...new Set(
      refFiles.flatMap((f) =>
        f.path
          .split('/')
          .slice(0, -1)
          .map((_, i, a) => a.slice(0, i + 1).join('/')),
      ),
    ),
  ];
  const entries: CapturedEntry[] = [
    ...dirs.map((d): CapturedEntry => ({ path: d, type: 'directory', mode: 0o755 })),
    ...refFiles.map((f): CapturedEntry => ({ path: f.path, type: 'file', mode: f.mode, content: f.content })),
  ];
  const ref = { capture: { entries, bytes: 0 }, archive: new Uint8Array() };

  it('derives the Python shapes over the changed file, its emptied and deleted copies, and the empty workspace', async () => {
    const vs = [...(await degenerateVariants(task, refFiles)), ...repoExtraVariants([{ path: 'ages/core.py', content: new Uint8Array(), mode: 0o644 }])];
    expect(vs.map((v) => v.id)).toEqual([
      'raise:Exception',
      'raise:ValueError',
      'return:None',
      'return:0',
      "return:''",
      'return:[]',
      'return:{}',
      'return:False',
      'return:True',
      'first-arg',
      'empty-files',
      'deleted',
      'deleted-files',
    ]);
    // Only the file the fix changed is rewritten (ages/__init__.py and the tests are the base's).
    for (const v of vs) for (const r of v.replace) expect(r.path).toBe('ages/core.py');
    expect(text(vs.find((v) => v.id === 'raise:ValueError')?.replace[0]?.content)).toContain("raise ValueError('degenerate')");
  });

  it('submits captures the judge grades as meant: a file rewritten, emptied, deleted, or nothing at all', async () => {
    const vs = [...(await degenerateVariants(task, refFiles)), ...repoExtraVariants([{ path: 'ages/core.py', content: new Uint8Array(), mode: 0o644 }])];
    const tree = async (id: string) => {
      const v = vs.find((x) => x.id === id);
      if (!v) throw new Error(id);
      const t = composeGradingTree(task, (await repoVariantCapture(ref, v)).capture);
      if ('refused' in t) throw new Error(t.refused);
      return t;
    };
    const raise = await tree('raise:ValueError');
    expect(raise.changed).toEqual(['ages/core.py']);
    expect(text(raise.files.get('ages/core.py')?.content)).toContain("raise ValueError('degenerate')");
    // The hidden tests are the judge's in every variant.
    expect(text(raise.files.get('tests/test_ages.py')?.content)).toContain('test_negative_age_rejected');
    const empty = await tree('empty-files');
    expect(empty.files.get('ages/core.py')?.content.byteLength).toBe(0);
    const gone = await tree('deleted-files');
    expect(gone.changed).toEqual(['ages/core.py']);
    expect(gone.files.has('ages/core.py')).toBe(false);
    expect(gone.files.has('ages/__init__.py')).toBe(true);
    const none = await tree('deleted');
    expect([...none.files.keys()].sort()).toEqual(['tests/test_ages.py']);
  });

  it('hashes what each variant submits: the deleted files are absent from its cache key rows', async () => {
    const v = repoExtraVariants([{ path: 'ages/core.py', content: new Uint8Array(), mode: 0o644 }])[0];
    if (!v) throw new Error('no variant');
    const rows = variantFiles(refFiles, v, task.workspace);
    expect(rows.map((f) => f.path).sort()).toEqual(
      refFiles
        .map((f) => f.path)
        .filter((p) => p !== 'ages/core.py')
        .sort(),
    );
    expect(repoExtraVariants([])).toEqual([]);
  });
});

const HAS_GO = (() => {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    console.warn('[repo-degenerate] skipping the Go rewriter tests: no go on PATH');
    return false;
  }
})();

describe.skipIf(!HAS_GO)('degenerate battery: the Go function-body shapes (host go)', () => {
  const file = (p: string, s: string) => ({ path: p, mode: 0o644, content: new Uint8Array(Buffer.from(s)) });
  const gomod = file('go.mod', 'module example.com/calc\n\ngo 1.19\n');
  // Imports used only inside bodies (strconv, errors) must go with them; fmt stays (a package-level var uses it).
  const calc = file(
    'calc.go',
    [
      '//go:build !never',
      '',
      'package calc',
      '',
      'import (',
      '\t"errors"',
      '\t"fmt"',
      '\t"strconv"',
      ')',
      '',
      'var prefix = fmt.Sprint("n=")',
      '',
      'var table map[string]int',
      '',
      'func init() { table = map[string]int{"one": 1} }',
      '',
      '// Parse reads a non-negative number.',
      'func Parse(s string) (int, error) {',
      '\tn, err := strconv.Atoi(s) // a comment in the body goes with it',
      '\tif err != nil || n < 0 {',
      '\t\treturn 0, errors.New("bad number")',
      '\t}',
      '\treturn n, nil',
      '}',
      '',
      'type Box[T any] struct{ v T }',
      '',
      'func (b *Box[T]) Get() (v T, ok bool) { return b.v, true }',
      '',
      'func label(n int) string { return prefix + strconv.Itoa(n) }',
      '',
    ].join('\n'),
  );
  const broken = file('calc.go', 'package calc\n\nimport "fmt"\n\nfunc Show() { fmt.Println(undefinedName) }\n');

  it('rewrites every body but init, prunes the imports left unused, and each variant compiles', async () => {
    const vs = await goBodyVariants('t', [gomod, calc], [calc]);
    expect(vs.map((v) => [v.id, v.name])).toEqual([
      ['go:panic', 'panic in every function'],
      ['go:zero', 'return zero values from every function'],
    ]);
    const panic = text(vs[0]?.replace[0]?.content) ?? '';
    const zero = text(vs[1]?.replace[0]?.content) ?? '';
    expect(panic.match(/panic\("sandgym: degenerate"\)/g)).toHaveLength(3);
    expect(panic).toContain('func init() { table = map[string]int{"one": 1} }');
    expect(panic).toContain('//go:build !never');
    expect(panic).not.toMatch(/"strconv"|"errors"|a comment in the body/);
    expect(panic).toContain('"fmt"');
    expect(zero).toContain('var sandgymZero0 int');
    expect(zero).toContain('var sandgymZero1 error');
    expect(zero).toMatch(/Get\(\) \(v T, ok bool\) \{\s*return\s*\}/);
  });

  it('names a variant that does not compile (it is graded all the same: the judge gives it 0)', async () => {
    const vs = await goBodyVariants('t', [gomod, broken], [broken]);
    // The body with the undefined name is gone, so the rewrite compiles where the original did not.
    expect(vs.map((v) => v.name)).toEqual(['panic in every function', 'return zero values from every function']);
    const notGo = file('calc.go', 'package calc\n\nfunc F() int { return 1 }\n\nvar x int = "no"\n');
    const bad = await goBodyVariants('t', [gomod, notGo], [notGo]);
    expect(bad[0]?.name).toMatch(/^panic in every function \(does not compile: .*cannot use "no"/);
  });
});
