// SWE-bench-format instances (SWE-bench, SWE-Gym, R2E-Gym publish this shape; docs/TASKS.md, "Importing SWE-bench
// instances"): parsing and validation of an instance file. Unknown top-level keys are ignored; the optional `sandgym`
// object carries provenance, licence, the environment recipe and where the base tree is. Every problem is an
// ImportError naming the line (JSONL) or index and the field.
import { validateGoRecipe, validateRecipe, type EnvironmentRecipe } from './repo-environment.js';
import { GO_TEST_ID, isPlainRelPath } from './repo-task.js';
import type { RepoLanguage } from './repo-types.js';

export type ImportErrorCode =
  | 'bad_file'
  | 'bad_instance'
  | 'duplicate_id'
  | 'source_not_found'
  | 'bad_archive'
  | 'archive_hash_mismatch'
  | 'too_large'
  | 'patch_failed'
  | 'patch_touches_tests'
  | 'test_patch_touches_source'
  | 'unknown_test'
  | 'git_failed'
  | 'git_missing'
  | 'out_exists';

/** Why an import was refused. Nothing is written when one is thrown. */
export class ImportError extends Error {
  override name = 'ImportError';
  constructor(
    readonly code: ImportErrorCode,
    message: string,
    readonly instance?: string,
  ) {
    super(message);
  }
}

export interface SandgymInstanceExtras {
  language: RepoLanguage;
  split: 'train' | 'eval';
  difficulty: 'easy' | 'medium' | 'hard';
  provenance: Record<string, unknown> & { source: string; licence: string };
  source?: { archive?: string; sha256?: string; strip_components?: number };
  environment: EnvironmentRecipe;
  timeout_s?: number;
  max_steps?: number;
  reward?: { partial_fail_to_pass?: boolean };
}

export interface SweInstance {
  instance_id: string;
  task_id: string;
  repo: string;
  base_commit: string;
  patch: string;
  test_patch: string;
  fail_to_pass: string[];
  pass_to_pass: string[];
  problem_statement: string;
  version?: string;
  environment_setup_commit?: string;
  created_at?: string;
  sandgym: SandgymInstanceExtras;
}

/** Largest instance file read (SWE-bench's full test split is ~40 MB of JSONL; ours are far smaller). */
export const MAX_INSTANCE_FILE_BYTES = 256 * 1024 * 1024;
const MAX_PATCH_CHARS = 5 * 1024 * 1024;
const TEST_ID = /^[^\s:][^\n\r\0]*\.py(::[^\n\r\0]+)+$/;

/** The task id an instance becomes: lowercased, anything outside [a-z0-9._-] replaced by "-", at most 64 characters. */
export function taskIdOf(instanceId: string): string {
  return instanceId
    .toLowerCase()
    .replace(/[^a-z0-9._-]/g, '-')
    .slice(0, 64);
}

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** SWE-bench on Hugging Face stores the test lists as JSON text; the papers' files as lists: both are accepted. */
function testList(v: unknown, where: string, fail: (w: string, m: string) => never, language: RepoLanguage): string[] {
  const what = language === 'go' ? 'Go test ids ("<package import path>::TestName")' : 'pytest node ids';
  let list = v;
  if (typeof v === 'string') {
    try {
      list = JSON.parse(v);
    } catch {
      return fail(where, `must be a list of ${what} (or a JSON string of one)`);
    }
  }
  if (!Array.isArray(list)) return fail(where, `must be a list of ${what} (or a JSON string of one)`);
  const seen = new Set<string>();
  return list.map((id, i) => {
    if (language === 'go') {
      if (typeof id !== 'string' || !GO_TEST_ID.test(id) || id.length > 1024)
        fail(`${where}/${i}`, `must be a Go test id as go test -json reports it ("<package import path>::TestName"), got ${JSON.stringify(id)}`);
    } else if (typeof id !== 'string' || !TEST_ID.test(id) || !isPlainRelPath(id.slice(0, id.indexOf('::'))))
      fail(`${where}/${i}`, `must be a pytest node id relative to the repository root (e.g. "tests/test_x.py::test_y"), got ${JSON.stringify(id)}`);
    if (seen.has(id)) fail(`${where}/${i}`, `${JSON.stringify(id)} is listed twice`);
    seen.add(id);
    return id;
  });
}

/** Validates one parsed instance. `at` names it in errors ("line 3"). */
export function validateInstance(v: unknown, at: string): SweInstance {
  const fail = (where: string, msg: string): never => {
    const id = isObj(v) && typeof v.instance_id === 'string' ? v.instance_id : undefined;
    throw new ImportError('bad_instance', `${at}${id ? ` (${id})` : ''}: ${where} ${msg}`, id);
  };
  if (!isObj(v)) return fail('/', 'must be a JSON object (one SWE-bench instance)');
  const s = (key: string, opts: { empty?: boolean; optional?: boolean; max?: number } = {}): string | undefined => {
    const x = v[key];
    if (x === undefined || x === null) {
      if (opts.optional) return undefined;
      return fail(`/${key}`, 'is required');
    }
    if (typeof x !== 'string' || (!opts.empty && x === '')) return fail(`/${key}`, opts.empty ? 'must be a string' : 'must be a non-empty string');
    if (x.length > (opts.max ?? 1_000_000)) return fail(`/${key}`, `is longer than ${opts.max ?? 1_000_000} characters`);
    return x;
  };
  const instance_id = s('instance_id', { max: 200 }) as string;
  const task_id = taskIdOf(instance_id);
  if (!/^[a-z0-9]/.test(task_id)) fail('/instance_id', 'must start with a letter or digit');
  const repo = s('repo', { max: 200 }) as string;
  const base_commit = s('base_commit', { max: 200 }) as string;
  const patch = s('patch', { max: MAX_PATCH_CHARS }) as string;
  const test_patch = s('test_patch', { empty: true, max: MAX_PATCH_CHARS }) as string;
  const problem_statement = s('problem_statement', { max: 200_000 }) as string;
  const sg0 = isObj(v.sandgym) ? v.sandgym : {};
  const language = sg0.language ?? 'python';
  if (language !== 'python' && language !== 'go') fail('/sandgym/language', 'must be "python" or "go"');
  const lang = language as RepoLanguage;
  const fail_to_pass = testList(v.FAIL_TO_PASS, '/FAIL_TO_PASS', fail, lang);
  const pass_to_pass = testList(v.PASS_TO_PASS ?? [], '/PASS_TO_PASS', fail, lang);
  if (fail_to_pass.length === 0) fail('/FAIL_TO_PASS', 'must name at least one test');
  const both = fail_to_pass.find((x) => pass_to_pass.includes(x));
  if (both) fail('/PASS_TO_PASS', `${JSON.stringify(both)} is also in FAIL_TO_PASS`);
  const version = v.version === undefined || v.version === null ? undefined : String(v.version);
  const environment_setup_commit = s('environment_setup_commit', { optional: true, max: 200 });
  const created_at = s('created_at', { optional: true, max: 100 });
  const sg = v.sandgym ?? {};
  if (!isObj(sg)) return fail('/sandgym', 'must be an object');
  for (const k of Object.keys(sg))
    if (!['language', 'split', 'difficulty', 'provenance', 'source', 'environment', 'timeout_s', 'max_steps', 'reward'].includes(k))
      fail(`/sandgym/${k}`, 'is not an allowed field');
  const split = sg.split ?? 'train';
  if (split !== 'train' && split !== 'eval') fail('/sandgym/split', 'must be "train" or "eval"');
  const difficulty = sg.difficulty ?? 'medium';
  if (!['easy', 'medium', 'hard'].includes(difficulty as string)) fail('/sandgym/difficulty', 'must be "easy", "medium" or "hard"');
  const prov = sg.provenance ?? {};
  if (!isObj(prov)) return fail('/sandgym/provenance', 'must be an object');
  const provenance = {
    ...prov,
    source: typeof prov.source === 'string' && prov.source !== '' ? prov.source : 'swe-bench-format instance',
    licence: typeof prov.licence === 'string' && prov.licence !== '' ? prov.licence : 'unknown (not stated by the instance file)',
  };
  let source: SandgymInstanceExtras['source'];
  if (sg.source !== undefined) {
    if (!isObj(sg.source)) return fail('/sandgym/source', 'must be an object');
    for (const k of Object.keys(sg.source)) if (!['archive', 'sha256', 'strip_components'].includes(k)) fail(`/sandgym/source/${k}`, 'is not an allowed field');
    const { archive, sha256, strip_components } = sg.source;
    if (archive !== undefined && (typeof archive !== 'string' || !isPlainRelPath(archive)))
      fail('/sandgym/source/archive', 'must be a relative path inside --repo-source (no "..")');
    if (sha256 !== undefined && (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256)))
      fail('/sandgym/source/sha256', 'must be 64 lowercase hex digits');
    if (strip_components !== undefined && (!Number.isInteger(strip_components) || (strip_components as number) < 0 || (strip_components as number) > 4))
      fail('/sandgym/source/strip_components', 'must be an integer in 0..4');
    source = {
      ...(archive !== undefined ? { archive: archive as string } : {}),
      ...(sha256 !== undefined ? { sha256: sha256 as string } : {}),
      ...(strip_components !== undefined ? { strip_components: strip_components as number } : {}),
    };
  }
  const envFail = (where: string, msg: string): never => fail(`/sandgym/environment${where}`, msg);
  const environment = lang === 'go' ? validateGoRecipe(sg.environment ?? {}, envFail) : validateRecipe(sg.environment ?? {}, envFail);
  const int = (key: 'timeout_s' | 'max_steps', max: number): number | undefined => {
    const x = sg[key];
    if (x === undefined) return undefined;
    if (!Number.isInteger(x) || (x as number) < 1 || (x as number) > max) return fail(`/sandgym/${key}`, `must be an integer in 1..${max}`);
    return x as number;
  };
  const timeout_s = int('timeout_s', 1800);
  const max_steps = int('max_steps', 1000);
  let reward: SandgymInstanceExtras['reward'];
  if (sg.reward !== undefined) {
    if (
      !isObj(sg.reward) ||
      Object.keys(sg.reward).some((k) => k !== 'partial_fail_to_pass') ||
      (sg.reward.partial_fail_to_pass !== undefined && typeof sg.reward.partial_fail_to_pass !== 'boolean')
    )
      fail('/sandgym/reward', 'must be {"partial_fail_to_pass": boolean}');
    reward = sg.reward as SandgymInstanceExtras['reward'];
  }
  return {
    instance_id,
    task_id,
    repo,
    base_commit,
    patch,
    test_patch,
    fail_to_pass,
    pass_to_pass,
    problem_statement,
    ...(version !== undefined ? { version } : {}),
    ...(environment_setup_commit !== undefined ? { environment_setup_commit } : {}),
    ...(created_at !== undefined ? { created_at } : {}),
    sandgym: {
      language: lang,
      split: split as 'train' | 'eval',
      difficulty: difficulty as 'easy' | 'medium' | 'hard',
      provenance,
      ...(source ? { source } : {}),
      environment,
      ...(timeout_s !== undefined ? { timeout_s } : {}),
      ...(max_steps !== undefined ? { max_steps } : {}),
      ...(reward ? { reward } : {}),
    },
  };
}

/** Parses an instance file: JSONL (one instance a line, blank lines skipped), a JSON array, or one JSON object. */
export function parseInstanceFile(text: string, name: string): SweInstance[] {
  const trimmed = text.trim();
  if (trimmed === '') throw new ImportError('bad_file', `${name}: empty (expected SWE-bench instances as JSONL, a JSON array or one object)`);
  let items: { v: unknown; at: string }[];
  if (trimmed.startsWith('[')) {
    let arr: unknown;
    try {
      arr = JSON.parse(trimmed);
    } catch (e) {
      throw new ImportError('bad_file', `${name}: invalid JSON (${(e as Error).message})`);
    }
    items = (arr as unknown[]).map((v, i) => ({ v, at: `${name}: [${i}]` }));
  } else {
    items = [];
    const lines = text.split('\n');
    // One object spread over several lines is a JSON document, not JSONL.
    let whole: unknown;
    let isWhole = false;
    try {
      whole = JSON.parse(trimmed);
      isWhole = true;
    } catch {
      /* JSONL */
    }
    if (isWhole) items = [{ v: whole, at: name }];
    else
      lines.forEach((line, i) => {
        if (line.trim() === '') return;
        let v: unknown;
        try {
          v = JSON.parse(line);
        } catch (e) {
          throw new ImportError('bad_file', `${name}: line ${i + 1}: invalid JSON (${(e as Error).message})`);
        }
        items.push({ v, at: `${name}: line ${i + 1}` });
      });
  }
  const out: SweInstance[] = [];
  const ids = new Map<string, string>();
  for (const { v, at } of items) {
    const inst = validateInstance(v, at);
    const prev = ids.get(inst.task_id);
    if (prev !== undefined)
      throw new ImportError(
        'duplicate_id',
        `${at}: instance ${JSON.stringify(inst.instance_id)} becomes task id ${inst.task_id}, as ${prev} does`,
        inst.instance_id,
      );
    ids.set(inst.task_id, at);
    out.push(inst);
  }
  return out;
}
