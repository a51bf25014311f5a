// `sandgym tasks` through the CLI's main(): list, check (leakage), usage errors and exit codes, and the
// sandbox provider that the composition root injects into validate. validate over the whole shipped
// set on a real driver runs in test/integrity/tasks-cli.integrity.test.ts.
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { EXIT, exitCodeFor } from '../src/cli/exit-codes.js';
import { main, report } from '../src/cli/run.js';
import { runTasks } from '../src/cli/tasks.js';

const TASKS_DIR = fileURLToPath(new URL('../../envs/tasks', import.meta.url));

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s) }, out: () => out.join(''), err: () => err.join('') };
}

const tasks = async (argv: string[]) => {
  const c = capture();
  const code = await main(['tasks', ...argv], c.io);
  return { code, out: c.out(), err: c.err() };
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-taskscli-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('list prints every task and the split counts; --json is machine-readable', async () => {
  const text = await tasks(['list', TASKS_DIR]);
  expect(text.code).toBe(0);
  const slug = JSON.parse(await readFile(path.join(TASKS_DIR, 'py-slugify', 'task.json'), 'utf8')) as { test: { expected_tests: number } };
  expect(text.out).toMatch(new RegExp(`py-slugify\\s+train\\s+easy\\s+python\\s+${slug.test.expected_tests} tests`));
  expect(text.out).toMatch(/^32 tasks \(train 22, eval 10\)$/m);
  const json = await tasks(['list', TASKS_DIR, '--json']);
  expect(json.code).toBe(0);
  expect((JSON.parse(json.out) as unknown[]).length).toBe(32);
});

test('check passes on the shipped set and fails (exit 1) on a copied task in the other split', async () => {
  const ok = await tasks(['check', TASKS_DIR]);
  expect(ok.code).toBe(0);
  expect(ok.out).toMatch(/OK: no task leaks between splits/);
  // A train task copied under a new id into eval: same content hash.
  const set = path.join(dir, 'leaky');
  await cp(path.join(TASKS_DIR, 'py-slugify'), path.join(set, 'py-slugify'), { recursive: true });
  await cp(path.join(TASKS_DIR, 'py-slugify'), path.join(set, 'py-slugify-copy'), { recursive: true });
  const tj = path.join(set, 'py-slugify-copy', 'task.json');
  const spec = JSON.parse(await readFile(tj, 'utf8')) as Record<string, unknown>;
  await writeFile(tj, JSON.stringify({ ...spec, id: 'py-slugify-copy', split: 'eval' }));
  const bad = await tasks(['check', set, '--threshold', '0.9']);
  expect(bad.code).toBe(1);
  expect(bad.out).toMatch(/ERROR duplicate_content/);
  const js = await tasks(['check', set, '--json']);
  expect(js.code).toBe(1);
  expect((JSON.parse(js.out) as { ok: boolean }).ok).toBe(false);
});

test('import swe-bench: a refused import exits 1 naming the code, and writes nothing', async () => {
  const file = path.join(dir, 'bad.jsonl');
  await writeFile(file, '{"instance_id": "x"}\n');
  const r = await tasks(['import', 'swe-bench', file, '--repo-source', dir, '--out', path.join(dir, 'never')]);
  expect(r.code).toBe(1);
  expect(r.err).toMatch(/^sandgym tasks import: bad_instance: .*\/repo is required\nnothing was written\n$/);
  await expect(readFile(path.join(dir, 'never'))).rejects.toThrow(/ENOENT/);
});

test('import swe-bench without git on PATH: exit 4 naming git (a missing facility, not a bad instance), nothing written', async () => {
  const src = path.join(fileURLToPath(new URL('../../envs/repo-sources/parse', import.meta.url)));
  const saved = process.env.PATH;
  process.env.PATH = path.join(dir, 'no-such-bin');
  try {
    const r = await tasks(['import', 'swe-bench', path.join(src, 'instances.jsonl'), '--repo-source', src, '--out', path.join(dir, 'never-git')]);
    expect(r.code).toBe(4);
    expect(r.err).toMatch(/^sandgym tasks import: git_missing: git is not installed \(or not on PATH\): .*git apply`\nnothing was written\n$/);
  } finally {
    process.env.PATH = saved;
  }
  await expect(readFile(path.join(dir, 'never-git'))).rejects.toThrow(/ENOENT/);
});

test.each([
  [['frobnicate'], 'tasks', /unknown subcommand 'frobnicate' \(expected list, check, validate, import, build-envs, stats\)/],
  [['--json'], 'tasks', /expected a subcommand/],
  [['import'], 'tasks import', /expected a format: swe-bench/],
  [['import', 'swe-gym', 'x.jsonl'], 'tasks import', /unknown import format "swe-gym" \(known: swe-bench\)/],
  [['import', 'swe-bench', 'x.jsonl', '--out', '/tmp/x'], 'tasks import swe-bench', /--repo-source is required/],
  [['import', 'swe-bench', '--repo-source', '/tmp', '--out', '/tmp/x'], 'tasks import swe-bench', /FILE/],
  [['list', TASKS_DIR, '--bogus'], 'tasks list', /unknown option '--bogus'/],
  [['check', TASKS_DIR, '--threshold'], 'tasks check', /option '--threshold' needs a value/],
  [['check', TASKS_DIR, '--threshold', '2'], 'tasks check', /--threshold must be a number in \(0, 1\], got '2'/],
  [['check', TASKS_DIR, '--json=yes'], 'tasks check', /option '--json' takes no value/],
  [['validate', TASKS_DIR, '--driver', 'vm'], 'tasks validate', /--driver must be one of docker, local, kubernetes, auto, got 'vm'/],
  [['validate', TASKS_DIR, '--concurrency', '0'], 'tasks validate', /--concurrency must be an integer in 1\.\.64/],
  [['validate', TASKS_DIR, '--only', 'nope'], 'tasks validate', /--only: unknown task id\(s\) nope/],
  [['validate', '--mutation-cache', '/tmp/x'], 'tasks validate', /--mutation-cache needs --mutants/],
  [['validate', TASKS_DIR, '--reruns', '1'], 'tasks validate', /--reruns must be an integer in 2\.\.20/],
  [['validate', TASKS_DIR, '--reruns', 'many'], 'tasks validate', /--reruns must be an integer in 2\.\.20/],
  [['build-envs', TASKS_DIR, '--concurrency', '0'], 'tasks build-envs', /--concurrency must be an integer in 1\.\.64/],
  [['build-envs', TASKS_DIR, '--bogus'], 'tasks build-envs', /unknown option '--bogus'/],
  [['validate', '--no-degenerate', '--degenerate-cache', '/tmp/x'], 'tasks validate', /--degenerate-cache has no effect with --no-degenerate/],
  [['validate', '--degenerate-cache', ''], 'tasks validate', /--degenerate-cache/],
  [['validate', '--mutants', '--mutation-threshold', '0'], 'tasks validate', /--mutation-threshold must be a number in \(0, 1\], got '0'/],
  [['validate', '--mutants', '--mutation-python', ''], 'tasks validate', /--mutation-python/],
])('usage error %j exits 2 and points to the right --help', async (argv, command, message) => {
  const r = await tasks(argv);
  expect(r.code).toBe(2);
  expect(r.out).toBe('');
  expect(r.err).toMatch(message);
  expect(r.err).toMatch(new RegExp(`^sandgym ${command}: .*\\nRun "sandgym ${command} --help" for usage\\.\\n$`));
});

test('a broken task set exits 3 naming file and field', async () => {
  const broken = path.join(dir, 'broken');
  await cp(path.join(TASKS_DIR, 'py-slugify'), path.join(broken, 'py-slugify'), { recursive: true });
  const tj = path.join(broken, 'py-slugify', 'task.json');
  const spec = JSON.parse(await readFile(tj, 'utf8')) as { test: Record<string, unknown> };
  await writeFile(tj, JSON.stringify({ ...spec, test: { ...spec.test, expected_tests: 'ten' } }));
  for (const sub of ['list', 'check', 'validate']) {
    const r = await tasks([sub, broken]);
    expect(r.code, sub).toBe(3);
    expect(r.err).toMatch(/py-slugify\/task\.json: \/test\/expected_tests must be integer/);
  }
});

test('without a directory, list / check / validate use both shipped sets (what serve loads by default)', async () => {
  const r = await tasks(['list', '--json']);
  expect(r.code).toBe(0);
  const rows = JSON.parse(r.out) as { id: string }[];
  // The function tasks (envs/tasks, also named @functions) then the repository tasks (@repository).
  const viaDir = JSON.parse((await tasks(['list', TASKS_DIR, '--json'])).out) as { id: string }[];
  const functions = JSON.parse((await tasks(['list', '@functions', '--json'])).out) as { id: string }[];
  const repository = JSON.parse((await tasks(['list', '@repository', '--json'])).out) as { id: string; validated?: unknown }[];
  // Repository rows say whether the task is validated in its image as it is now (the ledger: true, false, "unknown").
  for (const row of repository) expect([true, false, 'unknown'], row.id).toContain(row.validated);
  expect(functions.every((x) => !('validated' in x))).toBe(true);
  expect(functions.map((x) => x.id)).toEqual(viaDir.map((x) => x.id));
  expect(rows.map((x) => x.id)).toEqual([...viaDir, ...repository].map((x) => x.id));
  expect(viaDir.length).toBeGreaterThanOrEqual(30);
  expect(repository.length).toBeGreaterThanOrEqual(25);
  const c = capture();
  const asked: unknown[] = [];
  await runTasks(['validate', '--only', 'py-slugify'], c.io, {
    openSandboxProvider: async (kind) => {
      asked.push(kind);
      throw new Error('no driver here');
    },
  }).catch(() => {});
  expect(asked).toEqual(['auto']);
});

test('validate --mutants: a missing mutation tool is exit 4 before any sandbox is asked for', async () => {
  const c = capture();
  const asked: unknown[] = [];
  const error = await runTasks(['validate', '--only', 'py-slugify', '--mutants', '--mutation-python', '/nonexistent/python3'], c.io, {
    openSandboxProvider: async (kind) => {
      asked.push(kind);
      throw new Error('unexpected');
    },
  }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(asked).toEqual([]);
  expect(exitCodeFor(error)).toBe(EXIT.UNAVAILABLE);
  expect((error as Error).message).toMatch(/^mutation gate: cannot run \/nonexistent\/python3 for Python mutants/);
});

test('help: tasks --help and each subcommand exit 0; no subcommand prints the help and exits 2', async () => {
  for (const argv of [['--help'], ['help'], ['list', '-h'], ['check', '--help'], ['validate', '--help']]) {
    const r = await tasks(argv);
    expect(r.code, argv.join(' ')).toBe(0);
    expect(r.out).toMatch(/^Usage: sandgym tasks/);
  }
  const none = await tasks([]);
  expect(none.code).toBe(2);
  expect(none.out).toMatch(/^Usage: sandgym tasks/);
});

test('validate refuses repository tasks on bubblewrap at once (exit 4, naming them and the fix): asked by name, or picked by auto', async () => {
  const asked: unknown[] = [];
  let closed = 0;
  const deps = {
    openSandboxProvider: async (kind: string) => {
      asked.push(kind);
      // What auto gives on a machine without Docker: a bubblewrap provider (never used: refused before any sandbox).
      return {
        driver: 'local',
        provider: null as never,
        close: async () => {
          closed += 1;
        },
      };
    },
  };
  for (const d of ['local', 'auto']) {
    const c = capture();
    const t0 = performance.now();
    const error = await runTasks(['validate', '@repository', '--driver', d, '--only', 'proxy__semver-v3.2.1-range-rewrite'], c.io, deps).then(
      () => null,
      (e: unknown) => e,
    );
    expect(report(error, 'tasks', c.io)).toBe(EXIT.UNAVAILABLE);
    expect(c.err()).toMatch(
      new RegExp(
        `--driver ${d}${d === 'auto' ? ', which picked local' : ''} \\(bubblewrap\\) cannot validate repository tasks: .*not an image's root filesystem \\(1 of them: proxy__semver-v3\\.2\\.1-range-rewrite\\); use --driver docker or --driver kubernetes`,
      ),
    );
    expect(performance.now() - t0).toBeLessThan(30_000);
  }
  // local is refused before a provider is opened; auto's is closed again.
  expect(asked).toEqual(['auto']);
  expect(closed).toBe(1);
}, 120_000);

test('validate opens sandboxes only through the injected provider; a driver that cannot start is exit 4', async () => {
  const asked: unknown[] = [];
  const c = capture();
  const error = await runTasks(['validate', TASKS_DIR, '--only', 'py-slugify', '--driver', 'local', '--concurrency', '3'], c.io, {
    openSandboxProvider: async (kind, opts) => {
      asked.push([kind, opts]);
      throw new Error('bubblewrap (bwrap) is missing');
    },
  }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(asked).toEqual([['local', { maxTotal: 5 }]]);
  // Typed on its way to main(), which prints it and maps it to the exit code.
  expect(exitCodeFor(error)).toBe(EXIT.UNAVAILABLE);
  expect(report(error, 'tasks', c.io)).toBe(4);
  expect(c.err()).toBe('sandgym tasks: cannot open a sandbox driver (--driver local): bubblewrap (bwrap) is missing\n');
});
