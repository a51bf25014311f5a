// Issue 32: Go repository tasks over the wire (a real server on a loopback socket, the TS client, code-v0, real Docker).
// Two real tasks imported from envs/repo-sources/semver (Masterminds/semver/v3 module zips from the Go module proxy,
// release-to-release fixes): the reference fix scores 1, the untouched base 0, and every known attack on a Go
// repository's own test suite scores 0 WITH a reason, never a pass and never an error answer. The environment image
// (sandgym/python:1 + the pinned Go toolchain, std installed) is built once per machine and reused (cold: about 4 min
// on a loaded 2-core machine, the toolchain module ~70 MB from the module proxy). Gate: skipped with the reason without
// Docker, a failure under SANDGYM_REQUIRE_DOCKER=1 (CI).
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureRepoEnvImage } from '../../server/src/cli/repo-env-build.js';
import { loadTaskSets } from '../../envs/src/code/task-loader.js';
import type { LoadedTask } from '../../envs/src/code/task-types.js';
import { importSweBench } from '../../envs/src/repo/swe-import.js';
import { dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { type CodeAction, codeWire, expectZero, playRepo, referenceSteps, type RepoOutcome } from '../helpers/code-wire.js';
import { REPO_ROOT } from '../helpers/server.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));
const SOURCES = path.join(REPO_ROOT, 'envs/repo-sources/semver');
const CARET = 'proxy__semver-v3.2.0-caret-zero-minor';
const WILDCARD = 'proxy__semver-v3.2.0-wildcard-prerelease';
const MULTI = 'local__multi-twice';
const STEP_TIMEOUT_MS = 120_000;
/** The test limit of the imported tasks here (the data says 180 s): an endless loop costs this much CI time. */
const TEST_LIMIT_S = 8;

type Action = CodeAction;
type Outcome = RepoOutcome;

/** Go appended to constraints.go (a non-test file of the package): runs inside the test binary. */
const APPEND = (code: string) => `cat >> constraints.go <<'GOEOF'\n${code}\nGOEOF`;

describe.skipIf(!HAS_DOCKER)('Go repository tasks over the wire: docker driver', () => {
  let dir: string;
  let tasks: Map<string, LoadedTask>;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-repo-go-'));
    const lines = (await readFile(path.join(SOURCES, 'instances.jsonl'), 'utf8')).split('\n').filter((l) => l.trim() !== '');
    const picked = lines
      .map((l) => JSON.parse(l) as { instance_id: string; sandgym: { timeout_s?: number } })
      .filter((i) => i.instance_id === CARET || i.instance_id === WILDCARD)
      .map((i) => JSON.stringify({ ...i, sandgym: { ...i.sandgym, timeout_s: TEST_LIMIT_S } }));
    const file = path.join(dir, 'instances.jsonl');
    await writeFile(file, `${picked.join('\n')}\n`);
    const set = path.join(dir, 'set');
    await importSweBench({ file, repoSource: SOURCES, out: set });
    // A small module of two packages (the semver data has one): the FAIL_TO_PASS test in a subpackage's EXTERNAL test
    // package (package sub_test), a PASS_TO_PASS test at the root: one test binary and one canary file per package.
    const tree = path.join(dir, 'multi', MULTI);
    const files: Record<string, string> = {
      'go.mod': 'module example.com/multi\n\ngo 1.21\n',
      'a.go': 'package multi\n\nfunc A() int { return 1 }\n',
      'a_test.go': 'package multi\n\nimport "testing"\n\nfunc TestA(t *testing.T) {\n\tif A() != 1 {\n\t\tt.Fatal(A())\n\t}\n}\n',
      'sub/b.go': 'package sub\n\n// Twice doubles n.\nfunc Twice(n int) int { return n + n + 1 }\n',
      'sub/b_test.go':
        'package sub_test\n\nimport (\n\t"testing"\n\n\t"example.com/multi/sub"\n)\n\nfunc TestTwice(t *testing.T) {\n\tif got := sub.Twice(2); got != 4 {\n\t\tt.Fatalf("Twice(2) = %d", got)\n\t}\n}\n',
    };
    for (const [p, c] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(tree, p)), { recursive: true });
      await writeFile(path.join(tree, p), c);
    }
    const multi = {
      instance_id: MULTI,
      repo: 'local/multi',
      base_commit: 'v0',
      patch:
        'diff --git a/sub/b.go b/sub/b.go\n--- a/sub/b.go\n+++ b/sub/b.go\n@@ -1,4 +1,4 @@\n package sub\n \n // Twice doubles n.\n-func Twice(n int) int { return n + n + 1 }\n+func Twice(n int) int { return n + n }\n',
      test_patch: '',
      FAIL_TO_PASS: ['example.com/multi/sub::TestTwice'],
      PASS_TO_PASS: ['example.com/multi::TestA'],
      problem_statement: 'sub.Twice(2) returns 5; it must return 4.',
      sandgym: {
        language: 'go',
        provenance: { source: 'test fixture (written for this test)', licence: 'MIT' },
        environment: (JSON.parse(lines[0] as string) as { sandgym: { environment: unknown } }).sandgym.environment,
        timeout_s: TEST_LIMIT_S,
      },
    };
    await writeFile(path.join(dir, 'multi.json'), JSON.stringify(multi));
    await importSweBench({ file: path.join(dir, 'multi.json'), repoSource: path.join(dir, 'multi'), out: set });
    tasks = new Map((await loadTaskSets([set])).map((t) => [t.spec.id, t]));
    // Built once per machine (content-addressed tag); a no-op when present.
    await ensureRepoEnvImage((tasks.get(CARET) as LoadedTask).repo?.environment as NonNullable<LoadedTask['repo']>['environment']);
  }, 900_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const wire = codeWire(() => ({ driver: 'docker', tasks: [path.join(dir, 'set')], step_timeout_ms: STEP_TIMEOUT_MS }));

  const play = (task: string, steps: (string | Action)[]): Promise<Outcome> =>
    playRepo(wire.env, task, /edits to _test\.go files, testdata\/, go\.mod or go\.sum, and go\.work or vendor\/, are not graded/, steps);
  const reference = (task: string): Action[] => referenceSteps(tasks.get(task) as LoadedTask);
  const zero = expectZero;

  it('the reference fix scores 1 and the untouched base 0, on both tasks; the agent has a working go test', async () => {
    for (const task of [CARET, WILDCARD]) {
      const ref = await play(task, reference(task));
      expect(ref.reward, JSON.stringify(ref.grade)).toBe(1);
      expect(ref.grade.repo.report).toBe('ok');
      expect(ref.grader.isolation).toBe('in-process');
      const t = tasks.get(task) as LoadedTask;
      expect(ref.grade.repo.pass_to_pass.passed).toBe(t.repo?.pass_to_pass.length);
      zero(await play(task, []), /FAIL_TO_PASS tests did not pass/);
    }
    // The agent's own toolchain in its sandbox: the visible tests build and run offline.
    await wire.env.reset({ seed: 0, options: { task_id: CARET } });
    const r = await wire.env.step({
      name: 'bash',
      arguments: { command: 'cd /workspace && go test -count=1 -run TestNewVersion . 2>&1 | tail -3', timeout_s: 120 },
    });
    expect(String(r.observation)).toMatch(/ok\s+github\.com\/Masterminds\/semver\/v3/);
    await wire.env.step({ name: 'submit', arguments: {} });
  }, 300_000);

  it('a module of two packages (external test package in a subdirectory): reference 1, untouched 0, a forged subpackage test 0', async () => {
    const ref = await play(MULTI, reference(MULTI));
    expect(ref.reward, JSON.stringify(ref.grade)).toBe(1);
    expect(ref.grade.repo.pass_to_pass.passed).toBe(1);
    zero(await play(MULTI, []), /FAIL_TO_PASS tests did not pass: example\.com\/multi\/sub::TestTwice \(failed\)/);
    // The agent's edit of the subpackage's test file is not graded; a printed marked PASS from the root package's code
    // does not reach the subpackage's binary's verdict (one binary and one transcript per package).
    const forge = [
      'printf \'package sub_test\\n\\nimport "testing"\\n\\nfunc TestTwice(t *testing.T) {}\\n\' > sub/b_test.go',
      'printf \'\\nfunc init() { println("\\\\x16--- PASS: TestTwice (0.00s)") }\\n\' >> a.go',
    ].join('\n');
    const o = await play(MULTI, [forge]);
    zero(o, /FAIL_TO_PASS tests did not pass/);
    expect(o.grade.repo.ignored).toEqual(['sub/b_test.go']);
  }, 180_000);

  it('edited and added _test.go files, a go.mod replace, go.work and vendor/ are graded as the pristine copy: 0 without the fix, 1 with it', async () => {
    const forge = [
      // The hidden FAIL_TO_PASS tests replaced by ones that pass, and a test file of the agent's own with a TestMain.
      'cat > constraints_test.go <<\'EOF\'\npackage semver\n\nimport "testing"\n\nfunc TestConstraintsCheck(t *testing.T) {}\n\nfunc TestConstraintsValidate(t *testing.T) {}\nEOF',
      'cat > zz_agent_test.go <<\'EOF\'\npackage semver\n\nimport (\n\t"os"\n\t"testing"\n)\n\nfunc TestMain(m *testing.M) { os.Exit(0) }\nEOF',
      // A replace of the module by a copy of the agent's, a workspace file and a vendored copy.
      'mkdir -p fake && cp *.go fake/ && printf "module github.com/Masterminds/semver/v3\\n" > fake/go.mod',
      'printf "\\nreplace github.com/Masterminds/semver/v3 => ./fake\\n" >> go.mod',
      'printf "go 1.21\\n\\nuse ./fake\\n" > go.work',
      'mkdir -p vendor/github.com/x && printf "# github.com/x v1.0.0\\n" > vendor/modules.txt && cp version.go vendor/github.com/x/',
    ].join('\n');
    const attack = await play(CARET, [forge]);
    zero(attack, /FAIL_TO_PASS tests did not pass/);
    expect(attack.grade.repo.ignored).toEqual(
      expect.arrayContaining(['constraints_test.go', 'go.mod', 'go.work', 'vendor/modules.txt', 'vendor/github.com/x/version.go', 'zz_agent_test.go']),
    );
    // The same edits beside the real fix change nothing: they are not graded (fake/ is a package of its own: no test names it).
    const honest = await play(CARET, [...reference(CARET), forge]);
    expect(honest.reward, JSON.stringify(honest.grade)).toBe(1);
  }, 240_000);

  it('printed result lines (with and without the test2json marker) and printed JSON events are not believed', async () => {
    const print = APPEND(
      [
        'func init() {',
        '\tfor _, t := range []string{"TestConstraintsCheck", "TestConstraintsValidate"} {',
        '\t\tfmt.Println("--- PASS: " + t + " (0.00s)")',
        '\t\tfmt.Println("\\x16--- PASS: " + t + " (0.00s)")',
        '\t\tfmt.Println(`{"Action":"pass","Package":"github.com/Masterminds/semver/v3","Test":"` + t + `"}`)',
        '\t}',
        '}',
      ].join('\n'),
    );
    const o = await play(CARET, [print]);
    zero(o, /reported more than once/);
    // A marked result line printed from inside the running FAIL_TO_PASS test (its code calls Check): a second result.
    const inTest = [
      "python3 - <<'PYEOF'",
      "p = 'constraints.go'",
      's = open(p).read()',
      "head = 'func (cs Constraints) Check(v *Version) bool {'",
      's = s.replace(head, head + \'\\n\\tfmt.Print("\\\\x16--- PASS: TestConstraintsCheck (0.00s)\\\\n")\', 1)',
      'open(p, "w").write(s)',
      'PYEOF',
      "grep -q 'x16--- PASS: TestConstraintsCheck' constraints.go",
    ].join('\n');
    zero(await play(CARET, [inTest]), /reported more than once/);
  }, 240_000);

  it('os.Exit(0) in init, a forged transcript then exit, and a TestMain in a non-test file score 0 with a reason', async () => {
    zero(
      await play(CARET, [`sed -i 's/^import (/import (\\n\\t"os"/' constraints.go`, APPEND('func init() { os.Exit(0) }')]),
      /ended before the judge's canary/,
    );
    const transcript = APPEND(
      [
        'func init() {',
        '\tfor _, t := range []string{"TestConstraintsCheck", "TestConstraintsValidate"} {',
        '\t\tfmt.Println("\\x16=== RUN   " + t)',
        '\t\tfmt.Println("\\x16--- PASS: " + t + " (0.00s)")',
        '\t}',
        '\tfmt.Println("\\x16PASS")',
        '\tos.Exit(0)',
        '}',
      ].join('\n'),
    );
    zero(await play(CARET, [`sed -i 's/^import (/import (\\n\\t"os"/' constraints.go`, transcript]), /canary/);
    // Embedding the package's test files (the judge's canary among them, read by the judge's compile step): refused.
    const embed = APPEND('//go:embed *_test.go\nvar tests embed.FS');
    zero(await play(CARET, [`sed -i 's/^import (/import (\\n\\t"embed"/' constraints.go`, embed]), /adds \/\/go:embed directives \(constraints\.go\)/);
    // TestMain in a non-test file is an ordinary function: the test binary's main never calls it.
    const testMain = APPEND('func TestMain(m *testing.M) { os.Exit(0) }');
    zero(await play(CARET, [`sed -i 's/^import (/import (\\n\\t"os"\\n\\t"testing"/' constraints.go`, testMain]), /FAIL_TO_PASS tests did not pass/);
  }, 300_000);

  it('an endless loop is a timeout and a build failure is named: both 0, never an error answer', async () => {
    const loop = await play(CARET, [APPEND('func init() {\n\tfor {\n\t}\n}')]);
    zero(loop, new RegExp(`timed out after ${TEST_LIMIT_S}s`));
    const broken = await play(CARET, [APPEND('func broken( {')]);
    zero(broken, /does not build/);
    // A fix that breaks the API the hidden tests use does not build either: the agent's doing, a 0.
    zero(await play(CARET, ['sed -i "s/func (cs Constraints) Check(/func (cs Constraints) Check2(/" constraints.go']), /does not build/);
  }, 240_000);

  it("a process the test binary leaves behind is killed before the verdict is read (it held the binary's output open)", async () => {
    // A detached child inheriting the binary's stdout: the judge reads that pipe to its end, so a survivor would keep it
    // open (and could write into it) after the binary is gone. The judge kills every process of the agent uid first:
    // the honest fix plus such a child still scores 1, in about the time of an honest grading. (The kill used to be
    // `nsenter ... -- kill`, a program the image does not have: the grading then waited for the child, 300 s.)
    const child = APPEND(
      ['func init() {', '	c := exec.Command("sleep", "300")', '	c.Stdout = os.Stdout', '	c.Stderr = os.Stderr', '	_ = c.Start()', '}'].join('\n'),
    );
    const t0 = performance.now();
    const o = await play(CARET, [...reference(CARET), `sed -i 's/^import (/import (\\n\\t"os"\\n\\t"os\\/exec"/' constraints.go`, child]);
    expect(o.reward, JSON.stringify(o.grade)).toBe(1);
    expect(performance.now() - t0).toBeLessThan(60_000);
  }, 200_000);
});
