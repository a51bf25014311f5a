// The per-machine validation ledger of repository tasks (issue 32 items 1 and 4; docs/TASKS.md, "Repository tasks:
// validation"): what `tasks validate` found for a task in a given image, keyed by (the task's validation digest, the
// image's content id). An image is tagged by its recipe's hash, but a rebuild of the same recipe (another Debian point
// release in the base, a re-resolved wheel) can be a different image: its id has no record, so the task counts as not
// validated there until it is validated again (`tasks build-envs` does it; `serve` withholds a FAILED one and warns
// about an unknown one). One small JSON file per record, written to a temp file and renamed into place: concurrent
// validators never see half a record, the last writer wins (both wrote the truth of one run).
//
// Read at load and build time only (the CLI, serve's background builder): never on the step path.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LoadedTask } from '../code/task-types.js';
import { REPO_GRADER_VERSION } from './repo-grade.js';

/** Bumped when what a record means changes (e.g. validation checks more): every old record then reads as unknown. */
export const LEDGER_FORMAT = 1;

/** `validated` as listings show it: true (passed in this image), false (failed in it), "unknown" (no record). */
export type ValidatedState = true | false | 'unknown';

export interface LedgerRecord {
  format: number;
  task_id: string;
  /** ledgerTaskDigest of the task validated. */
  task_digest: string;
  /** The tag validated against (sandgym/repo-env:<recipe hash> or the base image). */
  image: string;
  /** The image's content id (`docker image inspect --format {{.Id}}`: sha256:...), as the grading sandbox reported it. */
  image_id: string;
  ok: boolean;
  problems: string[];
  flaky: string[];
  /** Gradings of each submission (reference, untouched) the flaky check compared. */
  reruns: number;
  /** ISO 8601 time of the validation. */
  validated_at: string;
}

/** The cache root of sandgym: $SANDGYM_CACHE_DIR, else $XDG_CACHE_HOME/sandgym, else ~/.cache/sandgym. */
export function sandgymCacheRoot(): string {
  if (process.env.SANDGYM_CACHE_DIR) return process.env.SANDGYM_CACHE_DIR;
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'sandgym');
}

/** The ledger's directory: <cache root>/repo-validation (beside repo-tasks). */
export function defaultLedgerDir(): string {
  return path.join(sandgymCacheRoot(), 'repo-validation');
}

/**
 * What a validation verdict depends on besides the image: the task's content hash (instruction, hidden tests, test
 * lists, base tree, recipe), the reference fix, the files it deletes, the test timeout, the reward rule, and the
 * repository grader (its runner and scripts: a new grader has not validated anything yet). A change to any of them is a
 * new digest: the old record no longer applies.
 */
export function ledgerTaskDigest(task: LoadedTask): string {
  const r = task.repo;
  const input = JSON.stringify({
    format: LEDGER_FORMAT,
    grader: REPO_GRADER_VERSION,
    content: task.content_hash,
    solution: task.solution.files.map((f) => [f.path, f.sha256]),
    deleted: r?.solution_deleted ?? [],
    timeout_s: task.spec.test.timeout_s,
    partial: r?.partial_fail_to_pass ?? false,
    limits: task.spec.limits ?? null,
  });
  return createHash('sha256').update(input).digest('hex');
}

function recordName(taskDigest: string, imageId: string): string {
  return `${createHash('sha256').update(`${taskDigest}\u0000${imageId}`).digest('hex')}.json`;
}

export class ValidationLedger {
  constructor(readonly dir: string = defaultLedgerDir()) {}

  /** The record of (task, image id), or null (none, unreadable, another format: all mean "not validated here"). */
  async get(taskDigest: string, imageId: string): Promise<LedgerRecord | null> {
    try {
      const r = JSON.parse(await readFile(path.join(this.dir, recordName(taskDigest, imageId)), 'utf8')) as LedgerRecord;
      return r?.format === LEDGER_FORMAT && r.task_digest === taskDigest && r.image_id === imageId && typeof r.ok === 'boolean' ? r : null;
    } catch {
      return null;
    }
  }

  async put(rec: Omit<LedgerRecord, 'format'>): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const file = path.join(this.dir, recordName(rec.task_digest, rec.image_id));
    const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(tmp, `${JSON.stringify({ format: LEDGER_FORMAT, ...rec }, null, 2)}\n`);
    await rename(tmp, file);
  }

  /** The task's state in the image with this id (null id: the image is not there, so nothing can be known). */
  async state(task: LoadedTask, imageId: string | null): Promise<{ validated: ValidatedState; record: LedgerRecord | null }> {
    if (imageId === null) return { validated: 'unknown', record: null };
    const record = await this.get(ledgerTaskDigest(task), imageId);
    return { validated: record === null ? 'unknown' : record.ok, record };
  }
}

/**
 * Repository tasks a server withholds (serve's background builder: the task's validation in its current image
 * FAILED), by task id and content hash, with the reason. Filled at build time; code-v0 reads it at reset (a map
 * lookup), never the ledger itself.
 */
const withheld = new Map<string, string>();
const withheldKey = (t: Pick<LoadedTask, 'content_hash'> & { spec: { id: string } }) => `${t.spec.id}\u0000${t.content_hash}`;

export function withholdTask(task: Pick<LoadedTask, 'content_hash'> & { spec: { id: string } }, reason: string): void {
  withheld.set(withheldKey(task), reason);
}

export function releaseTask(task: Pick<LoadedTask, 'content_hash'> & { spec: { id: string } }): void {
  withheld.delete(withheldKey(task));
}

/** Why the task is withheld, or undefined. */
export function withheldReason(task: Pick<LoadedTask, 'content_hash'> & { spec: { id: string } }): string | undefined {
  return withheld.size === 0 ? undefined : withheld.get(withheldKey(task));
}

/** What a validation result must carry to be recorded (validate.ts TaskValidation has it). */
export interface RecordableValidation {
  id: string;
  ok: boolean;
  problems: string[];
  null?: { image_id?: string | null };
  reference?: { image_id?: string | null };
  repo_checks?: { flaky: string[]; reruns?: number };
}

/**
 * Records a repository task's validation, when it is a verdict about the task in an image: both submissions were
 * graded in one image whose id the sandbox reported. A run cut short (an infrastructure error before a grading) or a
 * driver without images (bubblewrap) records nothing. Returns whether it recorded.
 */
export async function recordValidation(ledger: ValidationLedger, task: LoadedTask, r: RecordableValidation, now = new Date()): Promise<boolean> {
  const id = r.reference?.image_id ?? null;
  if (!task.repo || id === null || !r.null || (r.null.image_id ?? null) !== id) return false;
  await ledger.put({
    task_id: task.spec.id,
    task_digest: ledgerTaskDigest(task),
    image: task.spec.image,
    image_id: id,
    ok: r.ok,
    problems: r.problems,
    flaky: r.repo_checks?.flaky ?? [],
    reruns: r.repo_checks?.reruns ?? 2,
    validated_at: now.toISOString(),
  });
  return true;
}

export interface RepoTaskState {
  validated: ValidatedState;
  /** The image's current id (null: not built here, or no daemon answered). */
  image_id: string | null;
  record: LedgerRecord | null;
}

/**
 * Each repository task's state in its image as it is now: `imageIdOf` says the image's id (asked once per image: the
 * caller runs `docker image inspect`, envs run no host tool).
 */
export async function repoTaskStates(
  tasks: readonly LoadedTask[],
  imageIdOf: (image: string) => Promise<string | null>,
  ledger: ValidationLedger = new ValidationLedger(),
): Promise<Map<string, RepoTaskState>> {
  const ids = new Map<string, Promise<string | null>>();
  const out = new Map<string, RepoTaskState>();
  for (const t of tasks) {
    if (!t.repo) continue;
    let p = ids.get(t.spec.image);
    if (!p) {
      p = imageIdOf(t.spec.image);
      ids.set(t.spec.image, p);
    }
    const image_id = await p;
    const s = await ledger.state(t, image_id);
    out.set(t.spec.id, { ...s, image_id });
  }
  return out;
}
