// Loads task-set directories (docs/TASKS.md): validates every task.json against task-schema.json
// (compiled once), checks the directory layout, reads the files and hashes the content.
// Errors name the file and the field so a broken task set fails at startup, not mid-training.
import { readFile, readdir, lstat } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import { Rng } from '../rng.js';
import { MAX_TASK_FILE_BYTES, readTree, rel, TaskLoadError } from './task-files.js';
import { loadRepoTask, REPO_KIND } from '../repo/repo-task.js';
import { constraintsProblem } from './constraints.js';
import { taskContentHash } from './task-hash.js';
import {
  isHarnessFormat,
  type EquivalentMutant,
  type LoadedTask,
  type Split,
  type TaskFile,
  type TaskSolution,
  type TaskSpec,
  type WrongSolution,
} from './task-types.js';

const schemaPath = new URL('./task-schema.json', import.meta.url);
const taskSchema = JSON.parse(readFileSync(schemaPath, 'utf8')) as object;
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, useDefaults: false });
const validateTaskJson = ajv.compile<TaskSpec>(taskSchema);

export { MAX_TASK_FILE_BYTES, readTree, TaskLoadError };

const ALLOWED_ENTRIES = new Set(['task.json', 'workspace', 'tests', 'solution', 'wrong', 'mutants.json', 'README.md']);
const WRONG_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const MUTANT_ID = /^[0-9a-f]{12}(-[0-9]+)?$/;
const DEFAULT_COMMAND: Record<TaskSpec['test']['format'], string[]> = {
  'pytest-harness': ['python3', '-m', 'pytest'],
  'node-harness': ['node', '--test'],
  'pytest-junit': ['python3', '-m', 'pytest'],
  'node-test-junit': ['node', '--test'],
  'repo-pytest': ['python3', '-m', 'pytest'],
  'repo-go': ['go', 'test'],
};
/** Flags the grader owns; a task may not set them (they would undo the isolation). */
const RESERVED_FLAG =
  /^(-p|-c|-o|--override-ini|--rootdir|--confcutdir|--junit|--junitxml|--junit-xml|--basetemp|--import-mode|--assert|--test-reporter|--test-reporter-destination|--import|--require|-r|--loader|--experimental-loader|--inspect)/;

/** "envs/tasks/foo/task.json: /test/expected_tests must be integer" */
function formatAjvError(file: string, e: ErrorObject): string {
  let where = e.instancePath || '/';
  let msg = e.message ?? 'is invalid';
  if (e.keyword === 'required') (where = `${e.instancePath}/${(e.params as { missingProperty: string }).missingProperty}`), (msg = 'is required');
  if (e.keyword === 'additionalProperties')
    (where = `${e.instancePath}/${(e.params as { additionalProperty: string }).additionalProperty}`), (msg = 'is not an allowed field');
  if (e.keyword === 'enum') msg = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  return `${file}: ${where} ${msg}`;
}

/** Validates a parsed task.json; returns the spec with defaults applied or throws TaskLoadError. */
export function validateTaskSpec(value: unknown, file: string): LoadedTask['spec'] {
  if (!validateTaskJson(value)) {
    const errors = (validateTaskJson.errors ?? []).filter((e) => e.keyword !== 'if');
    throw new TaskLoadError(errors.map((e) => formatAjvError(file, e)).join('\n'), file);
  }
  const spec = value;
  const test = spec.test;
  // The in-process formats let the code under test decide its own verdict: only an explicit opt-in keeps them.
  if (isHarnessFormat(test.format)) {
    if (spec.trusted === true)
      throw new TaskLoadError(`${file}: /trusted is only for the in-process formats (pytest-junit, node-test-junit); ${test.format} needs no trust`, file);
  } else if (spec.trusted !== true) {
    throw new TaskLoadError(
      `${file}: /test/format ${test.format} runs the code under test inside the test runner, which can forge its own verdict: port the task to pytest-harness or node-harness (docs/TASKS.md) or set "trusted": true`,
      file,
    );
  }
  if (test.call_timeout_s !== undefined && !isHarnessFormat(test.format)) {
    throw new TaskLoadError(`${file}: /test/call_timeout_s applies to harness formats only`, file);
  }
  const command = test.command ?? DEFAULT_COMMAND[test.format];
  const prefix = DEFAULT_COMMAND[test.format];
  if (!prefix.every((p, i) => command[i] === p)) {
    throw new TaskLoadError(`${file}: /test/command must start with ${JSON.stringify(prefix)} for format ${test.format}`, file);
  }
  command.slice(prefix.length).forEach((arg, i) => {
    if (RESERVED_FLAG.test(arg)) throw new TaskLoadError(`${file}: /test/command/${prefix.length + i} ${JSON.stringify(arg)} is reserved for the grader`, file);
  });
  if (spec.final_state?.some((c) => c.check === 'matches')) {
    spec.final_state.forEach((c, i) => {
      if (c.check !== 'matches') return;
      try {
        new RegExp(c.value ?? '');
      } catch (err) {
        throw new TaskLoadError(`${file}: /final_state/${i}/value is not a valid regular expression (${(err as Error).message})`, file);
      }
    });
  }
  if (spec.rubric?.final_state !== undefined && spec.rubric.final_state > 0 && !spec.final_state) {
    throw new TaskLoadError(`${file}: /rubric/final_state is set but the task defines no final_state checks`, file);
  }
  // constraints: forms that depend on the language (the globs are checked against workspace/ in loadTask).
  if (spec.constraints) {
    const problem = constraintsProblem(spec.constraints, spec.language, null);
    if (problem) throw new TaskLoadError(`${file}: ${problem}`, file);
  }
  return {
    ...spec,
    max_steps: spec.max_steps ?? 30,
    tags: spec.tags ?? [],
    shaping: spec.shaping ?? 'on_write',
    trusted: spec.trusted === true,
    test: { ...test, command, timeout_s: test.timeout_s ?? 60, call_timeout_s: test.call_timeout_s ?? 10 },
  };
}

async function isDir(p: string): Promise<boolean> {
  try {
    return (await lstat(p)).isDirectory();
  } catch {
    return false;
  }
}

function isTestFileName(format: TaskSpec['test']['format'], p: string): boolean {
  const base = path.posix.basename(p);
  if (format === 'pytest-junit' || format === 'pytest-harness') return /^test_.*\.py$/.test(base) || /_test\.py$/.test(base);
  return /\.test\.(mjs|cjs|js)$/.test(base);
}

/** Loads one task directory. */
export async function loadTask(taskDir: string, setDir: string): Promise<LoadedTask> {
  const dir = path.resolve(taskDir);
  const file = rel(path.join(dir, 'task.json'));
  let raw: string;
  try {
    raw = await readFile(path.join(dir, 'task.json'), 'utf8');
  } catch {
    throw new TaskLoadError(`${file}: missing`, file);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new TaskLoadError(`${file}: invalid JSON (${(err as Error).message})`, file);
  }
  // Repository tasks (issue 32) have a format of their own (envs/src/repo/repo-task.ts).
  if (parsed !== null && typeof parsed === 'object' && (parsed as { kind?: unknown }).kind === REPO_KIND) return loadRepoTask(dir, setDir, parsed, file);
  const spec = validateTaskSpec(parsed, file);
  if (spec.id !== path.basename(dir))
    throw new TaskLoadError(`${file}: /id ${JSON.stringify(spec.id)} must equal the directory name ${JSON.stringify(path.basename(dir))}`, file);
  for (const name of await readdir(dir)) {
    if (!ALLOWED_ENTRIES.has(name))
      throw new TaskLoadError(`${rel(path.join(dir, name))}: unexpected entry (allowed: ${[...ALLOWED_ENTRIES].join(', ')})`, file);
  }
  for (const sub of ['workspace', 'tests', 'solution']) {
    if (!(await isDir(path.join(dir, sub)))) throw new TaskLoadError(`${rel(path.join(dir, sub))}/: missing directory`, file);
  }
  const workspace = await readTree(path.join(dir, 'workspace'));
  const tests = await readTree(path.join(dir, 'tests'));
  const solutionFiles = await readTree(path.join(dir, 'solution'));
  if (spec.constraints?.unchanged) {
    const problem = constraintsProblem(
      spec.constraints,
      spec.language,
      workspace.map((f) => f.path),
    );
    if (problem) throw new TaskLoadError(`${file}: ${problem}`, file);
  }
  const testDir = rel(path.join(dir, 'tests'));
  if (!tests.some((t) => isTestFileName(spec.test.format, t.path))) {
    throw new TaskLoadError(
      `${testDir}/: no test file for format ${spec.test.format} (${spec.test.format === 'node-test-junit' || spec.test.format === 'node-harness' ? '*.test.mjs' : 'test_*.py'})`,
      file,
    );
  }
  const solution = toSolution(solutionFiles, path.join(dir, 'solution'), file);
  const wrong = await loadWrong(dir, file);
  const equivalent_mutants = await loadEquivalents(dir);
  return {
    spec,
    dir,
    set: path.resolve(setDir),
    workspace,
    tests,
    solution,
    wrong,
    equivalent_mutants,
    content_hash: taskContentHash(spec.instruction, tests),
  };
}

function toSolution(files: TaskFile[], dir: string, file: string): TaskSolution {
  if (files.length === 0) throw new TaskLoadError(`${rel(dir)}/: empty (need overlay files or solve.sh)`, file);
  const script = files.find((f) => f.path === 'solve.sh');
  return script ? { kind: 'script', script, files: files.filter((f) => f !== script) } : { kind: 'overlay', files };
}

/** wrong/<name>/: each subdirectory is one known-wrong solution, laid out like solution/. */
async function loadWrong(dir: string, file: string): Promise<WrongSolution[]> {
  const root = path.join(dir, 'wrong');
  if (!(await exists(root))) return [];
  if (!(await isDir(root))) throw new TaskLoadError(`${rel(root)}: must be a directory of wrong solutions (wrong/<name>/)`, file);
  const out: WrongSolution[] = [];
  for (const name of (await readdir(root)).sort()) {
    const p = path.join(root, name);
    if (!(await isDir(p))) throw new TaskLoadError(`${rel(p)}: expected a directory (wrong/<name>/ holds one wrong solution laid out like solution/)`, file);
    if (!WRONG_NAME.test(name)) throw new TaskLoadError(`${rel(p)}: name must match ${WRONG_NAME.source}`, file);
    out.push({ name, solution: toSolution(await readTree(p), p, file) });
  }
  return out;
}

/** mutants.json: {"equivalent": [{"id", "reason"}]}: surviving mutants the author declares equivalent. */
async function loadEquivalents(dir: string): Promise<EquivalentMutant[]> {
  const p = path.join(dir, 'mutants.json');
  const file = rel(p);
  let raw: string;
  try {
    raw = await readFile(p, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new TaskLoadError(`${file}: unreadable (${(err as Error).message})`, file);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch (err) {
    throw new TaskLoadError(`${file}: invalid JSON (${(err as Error).message})`, file);
  }
  const list = (doc as { equivalent?: unknown } | null)?.equivalent;
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc) || !Array.isArray(list))
    throw new TaskLoadError(`${file}: expected {"equivalent": [{"id": "...", "reason": "..."}]}`, file);
  const extra = Object.keys(doc).filter((k) => k !== 'equivalent');
  if (extra.length > 0) throw new TaskLoadError(`${file}: /${extra[0]} is not an allowed field`, file);
  const seen = new Set<string>();
  return list.map((e: unknown, i: number) => {
    const m = e as Record<string, unknown> | null;
    if (m === null || typeof m !== 'object' || Array.isArray(m)) throw new TaskLoadError(`${file}: /equivalent/${i} must be an object`, file);
    for (const k of Object.keys(m))
      if (!['id', 'reason', 'diff'].includes(k)) throw new TaskLoadError(`${file}: /equivalent/${i}/${k} is not an allowed field`, file);
    if (typeof m.id !== 'string' || !MUTANT_ID.test(m.id))
      throw new TaskLoadError(`${file}: /equivalent/${i}/id must be a mutant id as the gate prints it (12 hex digits)`, file);
    // Marking a mutant equivalent silences a test gap: it needs a reason a reviewer can check.
    if (typeof m.reason !== 'string' || m.reason.trim().length < 10)
      throw new TaskLoadError(`${file}: /equivalent/${i}/reason must say why the mutant behaves like the reference (10+ characters)`, file);
    if (m.diff !== undefined && typeof m.diff !== 'string') throw new TaskLoadError(`${file}: /equivalent/${i}/diff must be a string`, file);
    if (seen.has(m.id)) throw new TaskLoadError(`${file}: /equivalent/${i}/id ${m.id} is listed twice`, file);
    seen.add(m.id);
    return { id: m.id, reason: m.reason.trim() };
  });
}

async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
}

export interface LoadOptions {
  /** 'error' (default): an id seen twice is refused. 'keep': keep both (for leakage checks). */
  onDuplicate?: 'error' | 'keep';
}

/** Loads task sets: each dir holds task directories (a dir that itself has task.json is one task). */
export async function loadTaskSets(dirs: readonly string[], opts: LoadOptions = {}): Promise<LoadedTask[]> {
  const tasks: LoadedTask[] = [];
  const seen = new Map<string, string>();
  for (const d of dirs) {
    const setDir = path.resolve(d);
    if (!(await isDir(setDir))) throw new TaskLoadError(`${rel(setDir)}: task set directory not found`, setDir);
    let taskDirs: string[];
    try {
      await lstat(path.join(setDir, 'task.json'));
      taskDirs = [setDir];
    } catch {
      taskDirs = [];
      for (const name of (await readdir(setDir)).sort()) {
        if (name.startsWith('.')) continue;
        const p = path.join(setDir, name);
        if (await isDir(p)) taskDirs.push(p);
      }
    }
    for (const td of taskDirs) {
      const task = await loadTask(td, setDir);
      const prev = seen.get(task.spec.id);
      if (prev !== undefined && opts.onDuplicate !== 'keep') {
        throw new TaskLoadError(
          `${rel(path.join(task.dir, 'task.json'))}: /id ${JSON.stringify(task.spec.id)} duplicates ${rel(path.join(prev, 'task.json'))}`,
          td,
        );
      }
      seen.set(task.spec.id, task.dir);
      tasks.push(task);
    }
  }
  return tasks;
}

/** Raised when a caller asks for a task or split it may not see. */
export class TaskAccessError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = 'TaskAccessError';
  }
}

/**
 * Tasks indexed by id and split, with an allow-list of exposed splits: a task of a split that is
 * not exposed is never returned, whatever the caller asks (eval tasks stay out of training).
 */
export class TaskSet {
  private readonly byId = new Map<string, LoadedTask>();
  private readonly bySplit = new Map<Split, LoadedTask[]>();

  constructor(
    tasks: readonly LoadedTask[],
    readonly exposedSplits: readonly Split[] = ['train'],
  ) {
    for (const t of tasks) {
      if (!exposedSplits.includes(t.spec.split)) continue;
      if (this.byId.has(t.spec.id)) throw new TaskLoadError(`duplicate task id ${JSON.stringify(t.spec.id)}`, t.dir);
      this.byId.set(t.spec.id, t);
      const list = this.bySplit.get(t.spec.split) ?? [];
      list.push(t);
      this.bySplit.set(t.spec.split, list);
    }
    // Sorted by id so a seed picks the same task whatever the directory listing order.
    for (const list of this.bySplit.values()) list.sort((a, b) => (a.spec.id < b.spec.id ? -1 : a.spec.id > b.spec.id ? 1 : 0));
  }

  /** Counts per exposed split (env_spec.tasks.splits). */
  splitCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const s of this.exposedSplits) out[s] = this.bySplit.get(s)?.length ?? 0;
    return out;
  }

  list(split?: Split): LoadedTask[] {
    if (split !== undefined) return [...(this.bySplit.get(split) ?? [])];
    return [...this.byId.values()];
  }

  /** By id; an id of a hidden split is reported exactly like an unknown id (no existence oracle). */
  get(id: string, split?: Split): LoadedTask {
    const t = this.byId.get(id);
    if (!t || (split !== undefined && t.spec.split !== split))
      throw new TaskAccessError(`unknown task ${JSON.stringify(id)}${split ? ` in split ${split}` : ''}`, '/task_id');
    return t;
  }

  /** Deterministic pick: the same seed and split give the same task for the same task set. */
  pick(seed: number, split: Split): LoadedTask {
    if (!this.exposedSplits.includes(split)) throw new TaskAccessError(`split ${JSON.stringify(split)} is not exposed by this server`, '/split');
    const list = this.bySplit.get(split) ?? [];
    if (list.length === 0) throw new TaskAccessError(`split ${JSON.stringify(split)} has no tasks`, '/split');
    return new Rng(seed).pick(list);
  }
}
