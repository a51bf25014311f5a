// Types of a task definition (task.json, see task-schema.json and docs/TASKS.md) and of a loaded task.
import type { RepoTaskData } from '../repo/repo-types.js';
import type { SandboxLimits } from '../sandbox-api.js';

export type Split = 'train' | 'eval';
export type TaskLanguage = 'python' | 'typescript' | 'javascript' | 'shell' | 'go';
export type Difficulty = 'easy' | 'medium' | 'hard';
export type ShapingMode = 'none' | 'on_write' | 'every_step';
/**
 * pytest-harness: hidden tests run in pytest AS THE JUDGE and reach workspace code only through the harness
 * (envs/src/code/harness/python: a worker process as the agent uid). node-harness: the same for `node --test`
 * (envs/src/code/harness/node, tests import 'sandgym-harness'). pytest-junit / node-test-junit: the old
 * in-process formats (code under test inside the test runner), accepted only with `trusted: true`. repo-pytest: a
 * repository task's own pytest suite (envs/src/repo, `"kind": "repository"`), never written in a task.json's test; repo-go:
 * the same for a Go repository's `go test` suite.
 */
export type TestFormat = 'pytest-harness' | 'node-harness' | 'pytest-junit' | 'node-test-junit' | 'repo-pytest' | 'repo-go';
/** Formats whose code under test never runs inside the judge. */
export const HARNESS_FORMATS: readonly TestFormat[] = ['pytest-harness', 'node-harness'];
export function isHarnessFormat(f: TestFormat): boolean {
  return HARNESS_FORMATS.includes(f);
}
/** Reward components (the syntax check of changed files is a diagnostic, not one of them). */
export type RubricComponent = 'tests' | 'final_state';

export interface FinalStateCheck {
  path: string;
  check: 'exists' | 'absent' | 'equals' | 'contains' | 'matches' | 'executable';
  value?: string;
}

/**
 * Requirements whose violation zeroes the score (docs/TASKS.md, "Constraints"). Checked by the judge on the
 * submitted files before any workspace code runs (constraints.ts), never by a test the submission can answer.
 */
export interface TaskConstraints {
  /**
   * Python / JS: "name" (a builtin or global function, any reference), "module.name" (a module's function, also
   * reached as a method of what the module returns), ".name" (a method or attribute by name). Shell: command names.
   * Declaring one also forbids the dynamic spellings that could reach it (getattr with a built name, eval, ...).
   */
  forbidden_calls?: string[];
  /** Modules the submission may not import, in any spelling (Python dotted names, JS/TS module specifiers). */
  forbidden_modules?: string[];
  /** Paths or globs ("*" within a segment, "**" across) of files that must stay as the task shipped them. */
  unchanged?: string[];
  limits?: ConstraintLimits;
}

export interface ConstraintLimits {
  /** Regular files in the submitted workspace. */
  max_files?: number;
  /** Bytes over all submitted files. */
  max_total_bytes?: number;
  /** Per-file caps for files matching a path or glob. */
  files?: { path: string; max_lines?: number; max_bytes?: number }[];
}

/** task.json as written (optional fields may be absent). */
export interface TaskSpec {
  id: string;
  instruction: string;
  split: Split;
  language: TaskLanguage;
  image: string;
  limits?: Partial<SandboxLimits>;
  max_steps?: number;
  tags?: string[];
  difficulty: Difficulty;
  rubric?: Partial<Record<RubricComponent, number>>;
  shaping?: ShapingMode;
  /** Old in-process formats only: the task author vouches that the code under test is not adversarial. */
  trusted?: boolean;
  test: { format: TestFormat; command?: string[]; expected_tests: number; timeout_s?: number; call_timeout_s?: number };
  final_state?: FinalStateCheck[];
  /**
   * Harness formats (issue 30): the workspace exception classes the hidden tests name (`pytest.raises(m.ParseError)`,
   * `assert.throws(f, m.ParseError)`), each with the builtin base it must have ("ValueError", "RangeError").
   */
  exceptions?: Record<string, string>;
  /** Gates: a violation zeroes the score with a zero_reason (constraints.ts). */
  constraints?: TaskConstraints;
  /** Tests that count only as far as the core tests pass (rubric.ts, gatedTestsFraction; the degenerate battery). */
  gated_tests?: TestGate[];
}

/** One file of a task directory, read into memory (task sets are small and read once at startup). */
export interface TaskFile {
  /** POSIX path relative to the section directory (workspace/, tests/ or solution/). */
  path: string;
  content: Uint8Array;
  /** Permission bits (0o755 for executables, else 0o644). */
  mode: number;
  sha256: string;
}

export type TaskSolution = { kind: 'overlay'; files: TaskFile[] } | { kind: 'script'; script: TaskFile; files: TaskFile[] };

/** A known-wrong solution (wrong/<name>/): a common mistake of the task's domain that must not pass. */
export interface WrongSolution {
  name: string;
  solution: TaskSolution;
}

/** A surviving mutant the author declares equivalent to the reference (mutants.json). */
export interface EquivalentMutant {
  /** The mutant's stable id as the gate reports it (envs/src/code/mutation/mutants.ts). */
  id: string;
  reason: string;
}

/** A validated task with defaults applied and its files loaded. */
export interface LoadedTask {
  spec: TaskSpec & {
    max_steps: number;
    tags: string[];
    shaping: ShapingMode;
    trusted: boolean;
    test: TaskSpec['test'] & { command: string[]; timeout_s: number; call_timeout_s: number };
  };
  /** Absolute path of the task directory. */
  dir: string;
  /** Absolute path of the task-set directory the task came from. */
  set: string;
  workspace: TaskFile[];
  tests: TaskFile[];
  solution: TaskSolution;
  /** Known-wrong solutions (wrong/<name>/), checked by `tasks validate`; never shown to an agent. */
  wrong: WrongSolution[];
  /** Mutants of the reference marked equivalent in mutants.json (the mutation gate re-checks them). */
  equivalent_mutants: EquivalentMutant[];
  /** sha256 over the normalised instruction and the hidden test files (see task-hash.ts). */
  content_hash: string;
  /** Repository tasks (`"kind": "repository"`, envs/src/repo/repo-task.ts): what grading them needs besides the above. */
  repo?: RepoTaskData;
}

/** One gate of `gated_tests` (rubric.ts `gatedTestsFraction` applies it; docs/TASKS.md, the degenerate battery). */
export interface TestGate {
  /** Name patterns (`*` and `?` wildcards) of the gated test cases, e.g. `test_rejects_*`, `test_parse_invalid[*]`. */
  tests: string[];
  /** Name patterns of the tests that unlock them (default: every test no gate names). */
  require?: string[];
  /** Why these tests are gated (for readers). */
  reason?: string;
}
