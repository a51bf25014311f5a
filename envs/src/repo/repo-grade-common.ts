// What both repository graders (Python: repo-grade.ts, Go: repo-grade-go.ts) share: options, the grading tree's tar
// and the reward from trusted per-test outcomes. A module of its own so that neither grader imports the other's.
import { type TarFile, writeTar } from '../code/workspace-tar.js';
import type { GradeResult } from '../code/grade.js';
import type { GradeCache } from '../code/rubric.js';
import type { SandboxProvider, SandboxRequirement } from '../sandbox-api.js';
import type { RepoTaskData } from './repo-types.js';

export interface RepoGradeOptions {
  provider: SandboxProvider;
  requirement: SandboxRequirement;
  cache?: GradeCache<GradeResult>;
  /** The grading run's budget inside the step deadline (grader-plan runLimits). */
  budgetMs?: number;
  /** PATH of the test run (default: the runner default). */
  path?: string;
  python?: string;
  /** Tests only: fixed canary/token randomness is never used in production; the default draws fresh values. */
  random?: () => string;
}

export interface TreeFile {
  content: Uint8Array;
  mode: number;
}

/** The judge's tar of the grading tree: repo/ (the tree), runner/ (the runner), and an empty pytest.ini above repo/. */
export function gradingTreeTar(files: Map<string, TreeFile>, extra: { path: string; content: string | Uint8Array }[]): Promise<Uint8Array> {
  const entries: TarFile[] = [];
  const dirs = new Set<string>();
  const add = (path: string, content: Uint8Array, mode: number) => {
    const segs = path.split('/');
    for (let i = 1; i < segs.length; i++) {
      const d = segs.slice(0, i).join('/');
      if (!dirs.has(d)) entries.push({ path: d, type: 'directory', mode: 0o755 });
      dirs.add(d);
    }
    entries.push({ path, content, mode });
  };
  for (const f of extra) add(f.path, typeof f.content === 'string' ? Buffer.from(f.content) : f.content, 0o644);
  for (const [path, f] of [...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) add(`repo/${path}`, f.content, f.mode);
  return writeTar(entries);
}

export const MAX_LISTED = 50;

export function firstFew(ids: string[]): string {
  return ids.slice(0, 3).join(', ') + (ids.length > 3 ? `, ... (${ids.length} in all)` : '');
}

/**
 * The reward from trusted per-test outcomes: 1 only when every FAIL_TO_PASS and PASS_TO_PASS test passed; with
 * `partial_fail_to_pass`, the FAIL_TO_PASS fraction, only while every PASS_TO_PASS test passed. A 0 always has a reason.
 */
export function repoReward(
  repo: Pick<RepoTaskData, 'fail_to_pass' | 'pass_to_pass' | 'partial_fail_to_pass'>,
  outcomes: Record<string, string>,
): { value: number; zero?: string } {
  const f2pFailed = repo.fail_to_pass.filter((id) => outcomes[id] !== 'passed');
  const p2pFailed = repo.pass_to_pass.filter((id) => outcomes[id] !== 'passed');
  const list = (ids: string[]) => firstFew(ids.map((id) => `${id} (${outcomes[id] ?? 'missing'})`));
  if (p2pFailed.length > 0) return { value: 0, zero: `${p2pFailed.length} of ${repo.pass_to_pass.length} PASS_TO_PASS tests did not pass: ${list(p2pFailed)}` };
  if (f2pFailed.length === 0) return { value: 1 };
  const f2pZero = `${f2pFailed.length} of ${repo.fail_to_pass.length} FAIL_TO_PASS tests did not pass: ${list(f2pFailed)}`;
  if (!repo.partial_fail_to_pass || f2pFailed.length === repo.fail_to_pass.length) return { value: 0, zero: f2pZero };
  return { value: (repo.fail_to_pass.length - f2pFailed.length) / repo.fail_to_pass.length };
}
