// Types of a repository task (repo-task.ts loads and validates them; docs/TASKS.md, "Repository tasks"). A module of
// its own, importing nothing of envs/src/code, so task-types.ts can name them without an import cycle.
import type { SandboxLimits } from '../sandbox-api.js';
import type { EnvironmentRecipe } from './repo-environment.js';

export interface RepoProvenance {
  source: string;
  licence: string;
  package?: string;
  version?: string;
  fixed_version?: string;
  url?: string;
  sha256?: string;
  upstream_fix?: string;
  notes?: string;
  [k: string]: unknown;
}

/** One entry of tests.excluded_flaky: a test dropped from a list because validation saw it flip. */
export interface ExcludedFlaky {
  id: string;
  /** The list it was dropped from. */
  from: 'fail_to_pass' | 'pass_to_pass';
  /** Outcomes per grading that showed it flaky (base: the untouched repository; reference: with the fix). */
  seen: { base: string[]; reference: string[] };
  /** Gradings of each submission compared. */
  reruns: number;
  /** When (ISO 8601 date). */
  detected: string;
}

/** The languages of repository tasks: Python (pytest) and Go (go test, module without dependencies). */
export type RepoLanguage = 'python' | 'go';

/** task.json of a repository task, as written. */
export interface RepoTaskJson {
  kind: 'repository';
  id: string;
  instruction: string;
  split: 'train' | 'eval';
  language: RepoLanguage;
  difficulty: 'easy' | 'medium' | 'hard';
  max_steps?: number;
  limits?: Partial<SandboxLimits>;
  environment: EnvironmentRecipe;
  tests: {
    /** "pytest" (Python) or "go-test" (Go). */
    framework: 'pytest' | 'go-test';
    fail_to_pass: string[];
    pass_to_pass: string[];
    timeout_s?: number;
    /** Files test_patch deletes (the judge removes them from the grading tree). */
    deleted?: string[];
    /** Tests dropped from the lists because validation saw their outcome flip (`tasks validate --drop-flaky`): provenance. */
    excluded_flaky?: ExcludedFlaky[];
  };
  /** Files the reference fix deletes. */
  solution_deleted?: string[];
  reward?: { partial_fail_to_pass?: boolean };
  provenance: RepoProvenance;
  /** The SWE-bench instance's identifying fields, as imported (instance_id, repo, base_commit, version...). */
  instance?: Record<string, string>;
}

/** What a loaded repository task carries besides the LoadedTask fields (LoadedTask.repo). */
export interface RepoTaskData {
  json: RepoTaskJson;
  language: RepoLanguage;
  /** Go: the module path (go.mod of the base tree), which maps a test id's package to its directory. */
  go_module?: string;
  fail_to_pass: string[];
  pass_to_pass: string[];
  timeout_s: number;
  deleted_tests: string[];
  solution_deleted: string[];
  partial_fail_to_pass: boolean;
  environment: EnvironmentRecipe;
}

/** What info.grader.isolation says for repository tasks: the code under test shares the test runner's process. */
export const REPO_ISOLATION = 'in-process';

/** What a repository grade adds to info.grade (GradeResult.repo). */
export interface RepoGradeInfo {
  isolation: typeof REPO_ISOLATION;
  fail_to_pass: { passed: number; total: number; failed: string[] };
  pass_to_pass: { passed: number; total: number; failed: string[] };
  /** Test, test-support or never-graded paths the agent changed: graded as the judge's pristine copy instead. */
  ignored: string[];
  /** "ok", or why the run's report was not trusted (a canary came out wrong, no report, a wrong token). */
  report: string;
  /** Per-test outcome of the FAIL_TO_PASS and PASS_TO_PASS tests ("passed", "failed", "error", "skipped", "missing"). */
  outcomes: Record<string, string>;
}
