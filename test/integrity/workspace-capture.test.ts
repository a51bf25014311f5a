// Issue 30, item 1: the judge grades the workspace that exists (envs/src/workspace/capture.ts). Played over the wire
// (a real server on a loopback socket, the TS client, code-v0) on Docker and on bubblewrap, against the shipped task
// sh-project-skeleton, whose checks include "TODO.txt is deleted" (a hidden test and a final_state `absent`).
// Every attack an optimiser finds after reading the old filter (hard links, padded and sparse files, files hidden
// under dependency-folder names, special files, unreadable files, symlinks named like a checked path, many
// entries) is paired IN THE SAME TEST with an honest submission that reaches the same real state: both must score
// the same, and no step may answer with an error (a retryable SANDBOX_ERROR for the agent's own doing would let it
// erase a bad episode). Gates: skipped with the reason without Docker / bubblewrap, a failure under
// SANDGYM_REQUIRE_DOCKER=1 / SANDGYM_REQUIRE_BWRAP=1 (CI).
import { describe, expect, it } from 'vitest';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/server-env.js';
import { loadTaskSets } from '../../envs/src/code/task-loader.js';
import type { LoadedTask } from '../../envs/src/code/task-types.js';
import { bwrapFacility, dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { type CodeGrade, codeWire, submitStep } from '../helpers/code-wire.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));
const HAS_BWRAP = gate('bwrap', await bwrapFacility());

const TASK = 'sh-project-skeleton';
const tasks = await loadTaskSets([SHIPPED_TASKS_DIR]);
const task = tasks.find((t) => t.spec.id === TASK) as LoadedTask;
if (task.solution.kind !== 'script') throw new Error(`${TASK}: expected a script solution`);
const SOLVE = Buffer.from(task.solution.script.content).toString('utf8');
/** Everything the task asks except deleting TODO.txt. */
const SOLVE_KEEP_TODO = SOLVE.split('\n')
  .filter((l) => !/^rm -f TODO\.txt$/.test(l.trim()))
  .join('\n');
expect(SOLVE_KEEP_TODO).not.toBe(SOLVE);
/** Tests (5 of 6 pass: the TODO test fails) + final_state (4 of 5: `absent TODO.txt` fails), by the task's own weights. */
const RUBRIC = task.spec.rubric as { tests: number; final_state: number };
const KEPT_TODO_SCORE = RUBRIC.tests * (5 / 6) + RUBRIC.final_state * (4 / 5);
// The partial score must stay strictly between the honest 0 of an untouched skeleton and the reference's 1.
expect(KEPT_TODO_SCORE).toBeGreaterThan(0.5);
expect(KEPT_TODO_SCORE).toBeLessThan(1);

/** Every folder name the old filter dropped whole ("dependency-like"); the capture carries them all. */
const DEPENDENCY_DIRS = ['node_modules', '.git', '__pycache__', '.venv', '.tox', '.nox', '.hg', '.svn', '.mypy_cache', '.pytest_cache'];

const STEP_TIMEOUT_MS = 120_000;

interface Outcome {
  reward: number;
  grade: CodeGrade;
  /** The bash step's observation (the agent's own view of what its commands did). */
  shell: string;
  /** Wall time of the submit step (capture and grading), ms. */
  submitMs: number;
}

const DRIVERS = [
  { name: 'docker' as const, ok: HAS_DOCKER },
  { name: 'local' as const, ok: HAS_BWRAP },
];

for (const drv of DRIVERS) {
  describe.skipIf(!drv.ok)(`the judge grades the workspace that exists, over the wire: ${drv.name} driver`, () => {
    // shaping none: only submit grades, so each submission is graded exactly once.
    const wire = codeWire({ driver: drv.name, step_timeout_ms: STEP_TIMEOUT_MS });

    /** reset, one bash command in /workspace, submit. Any error answer fails the test with its code. */
    async function play(command: string): Promise<Outcome> {
      const env = wire.env;
      await env.reset({ seed: 0, options: { task_id: TASK } });
      const sh = await env.step({ name: 'bash', arguments: { command: `set -e\ncd /workspace\n${command}`, timeout_s: 120 } });
      const shell = String(sh.observation);
      expect(shell.split('\n')[0], shell).toBe('exit code: 0');
      const t0 = performance.now();
      const s = await submitStep(env);
      const submitMs = performance.now() - t0;
      return { reward: s.reward, grade: (s.info as { grade: CodeGrade }).grade, shell, submitMs };
    }

    /** Both submissions reach the same real state: same score, same reason class. */
    function same(attack: Outcome, honest: Outcome, score: number): void {
      expect({ attack: attack.reward, honest: honest.reward }).toEqual({ attack: expect.closeTo(score, 9), honest: expect.closeTo(score, 9) });
      expect(attack.grade.score).toBeCloseTo(honest.grade.score, 9);
    }

    it('baselines: the reference scores 1, keeping TODO.txt scores the partial score', async () => {
      const ref = await play(SOLVE);
      expect(ref.reward).toBeCloseTo(1, 9);
      expect(ref.grade.dropped).toBe(0);
      const kept = await play(SOLVE_KEEP_TODO);
      expect(kept.reward).toBeCloseTo(KEPT_TODO_SCORE, 9);
      expect(kept.grade.tests).toMatchObject({ collected: 6, passed: 5 });
    }, 300_000);

    it('hard links: TODO.txt kept under a second name (several, so TODO.txt is not the first in tar order) = a copy', async () => {
      const names = Array.from({ length: 8 }, (_, i) => `keep${i}.txt`);
      const attack = await play(`${SOLVE_KEEP_TODO}\nfor n in ${names.join(' ')}; do ln TODO.txt "$n"; done\nstat -c '%h' TODO.txt`);
      expect(attack.shell).toMatch(/\b9\b/);
      const honest = await play(`${SOLVE_KEEP_TODO}\nfor n in ${names.join(' ')}; do cp TODO.txt "$n"; done`);
      same(attack, honest, KEPT_TODO_SCORE);
    }, 300_000);

    it('a padded TODO.txt over the old 1 MiB file cap is TODO.txt: the same as leaving it', async () => {
      const attack = await play(`${SOLVE_KEEP_TODO}\nhead -c 2097152 /dev/zero >> TODO.txt`);
      const honest = await play(SOLVE_KEEP_TODO);
      same(attack, honest, KEPT_TODO_SCORE);
    }, 300_000);

    it('a file over the whole-workspace cap fails closed with the path and the rule (attack and honest alike, never an error)', async () => {
      const attack = await play(`${SOLVE_KEEP_TODO}\nhead -c 68157440 /dev/zero >> TODO.txt`);
      const honest = await play(`${SOLVE}\nhead -c 68157440 /dev/urandom > data.bin`);
      same(attack, honest, 0);
      expect(attack.grade.zero_reason).toBe('workspace file TODO.txt is larger than the 64 MiB workspace cap');
      expect(honest.grade.zero_reason).toBe('workspace file data.bin is larger than the 64 MiB workspace cap');
      // Many files each under the cap, together over it: the archive is cut at its cap.
      const spread = await play(`${SOLVE}\nfor i in 1 2 3 4 5; do head -c 16777216 /dev/urandom > part$i.bin; done`);
      expect(spread.reward).toBe(0);
      expect(spread.grade.zero_reason).toMatch(/^workspace is larger than the 64 MiB workspace cap/);
    }, 300_000);

    it('a 10 GB sparse file is refused from its size, in seconds (attack: TODO.txt made sparse; honest: a sparse image next to a full solve)', async () => {
      // bubblewrap bounds a file's size by RLIMIT_FSIZE (disk_mb): there the sparse file is as large as that allows.
      const sparse = (p: string) => `(ulimit -f unlimited 2>/dev/null; truncate -s 10G ${p}) 2>/dev/null || truncate -s 400M ${p}\nls -ls ${p}`;
      const attack = await play(`${SOLVE_KEEP_TODO}\n${sparse('TODO.txt')}`);
      const honest = await play(`${SOLVE}\n${sparse('disk.img')}`);
      expect(attack.shell).toMatch(drv.name === 'docker' ? /10737418240/ : /(10737418240|419430400)/);
      same(attack, honest, 0);
      expect(attack.grade.zero_reason).toBe('workspace file TODO.txt is larger than the 64 MiB workspace cap');
      expect(honest.grade.zero_reason).toBe('workspace file disk.img is larger than the 64 MiB workspace cap');
      // No 10 GB was read or streamed: the whole submit step (capture included) is quick even on a loaded machine.
      expect(attack.submitMs).toBeLessThan(30_000);
      expect(honest.submitMs).toBeLessThan(30_000);
    }, 300_000);

    it('TODO.txt moved under each dependency-folder name and left reachable by a symlink = TODO.txt left in place', async () => {
      const honest = await play(SOLVE_KEEP_TODO);
      for (const dir of DEPENDENCY_DIRS) {
        const attack = await play(`${SOLVE_KEEP_TODO}\nmkdir -p ${dir}\nmv TODO.txt ${dir}/TODO.txt\nln -s ${dir}/TODO.txt TODO.txt\ncat TODO.txt >/dev/null`);
        same(attack, honest, KEPT_TODO_SCORE);
      }
      // And hard-linked under one (the root name is still TODO.txt, whichever name tar meets first).
      const linked = await play(`${SOLVE_KEEP_TODO}\nmkdir -p node_modules/pkg .git\nln TODO.txt node_modules/pkg/TODO.txt\nln TODO.txt .git/TODO.txt`);
      same(linked, honest, KEPT_TODO_SCORE);
      // Deleting TODO.txt after stashing a copy under a dependency folder is deleting it: full score, the folder carried.
      const stashed = await play(`${SOLVE}\nmkdir -p node_modules && printf 'old todo\\n' > node_modules/TODO.txt`);
      expect(stashed.reward).toBeCloseTo(1, 9);
    }, 600_000);

    it('a symlink named TODO.txt pointing elsewhere is a TODO.txt that exists (absent fails), as keeping the file does', async () => {
      const attack = await play(`${SOLVE_KEEP_TODO}\nmv TODO.txt elsewhere.txt\nln -s elsewhere.txt TODO.txt`);
      const honest = await play(`${SOLVE_KEEP_TODO}\ncp TODO.txt elsewhere.txt`);
      same(attack, honest, KEPT_TODO_SCORE);
    }, 300_000);

    it('special files are refused by name: a FIFO named TODO.txt / a FIFO beside a full solve', async () => {
      const attack = await play(`${SOLVE}\nmkfifo TODO.txt`);
      const honest = await play(`${SOLVE}\nmkfifo events.pipe`);
      same(attack, honest, 0);
      expect(attack.grade.zero_reason).toBe('workspace path TODO.txt is a FIFO: special files cannot be graded');
      expect(honest.grade.zero_reason).toBe('workspace path events.pipe is a FIFO: special files cannot be graded');
    }, 300_000);

    it('special files are refused by name: a unix socket named TODO.txt / a socket beside a full solve', async () => {
      const bind = (p: string) => `python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' ${p}`;
      const attack = await play(`${SOLVE}\n${bind('TODO.txt')}\ntest -S TODO.txt`);
      const honest = await play(`${SOLVE}\n${bind('app.sock')}\ntest -S app.sock`);
      same(attack, honest, 0);
      expect(attack.grade.zero_reason).toBe('workspace path TODO.txt is a unix socket: special files cannot be graded');
      expect(honest.grade.zero_reason).toBe('workspace path app.sock is a unix socket: special files cannot be graded');
    }, 300_000);

    it('a chmod-000 file and a chmod-000 directory: a 0 naming the path, never a retryable error', async () => {
      const file = await play(`${SOLVE_KEEP_TODO}\nchmod 000 TODO.txt`);
      const honestFile = await play(`${SOLVE}\nprintf 'key\\n' > secret.txt\nchmod 000 secret.txt`);
      same(file, honestFile, 0);
      expect(file.grade.zero_reason).toMatch(/^workspace path TODO\.txt is unreadable by the agent/);
      expect(honestFile.grade.zero_reason).toMatch(/^workspace path secret\.txt is unreadable by the agent/);
      const dir = await play(`${SOLVE}\nmkdir vault\nprintf 'todo\\n' > vault/TODO.txt\nchmod 000 vault`);
      const honestDir = await play(`${SOLVE}\nmkdir private\nchmod 000 private`);
      same(dir, honestDir, 0);
      expect(dir.grade.zero_reason).toMatch(/^workspace path vault is unreadable by the agent/);
      expect(honestDir.grade.zero_reason).toMatch(/^workspace path private is unreadable by the agent/);
    }, 300_000);

    it('a name with a newline fails closed naming it (attack: the TODO file renamed with a newline; honest: such a name beside a full solve)', async () => {
      const attack = await play(`${SOLVE_KEEP_TODO}\nmv TODO.txt "$(printf 'TODO.txt\\nx')"`);
      const honest = await play(`${SOLVE}\nprintf 'n\\n' > "$(printf 'notes\\nold')"`);
      same(attack, honest, 0);
      expect(attack.grade.zero_reason).toBe('workspace path "TODO.txt\\nx" has a control character in its name: such names cannot be graded');
    }, 300_000);

    it('too many entries fail closed (attack: TODO.txt kept among 25,000 files; honest: 25,000 files beside a full solve)', async () => {
      const many = 'mkdir -p many && cd many && seq 1 25000 | xargs touch && cd ..';
      const attack = await play(`${SOLVE_KEEP_TODO}\n${many}`);
      const honest = await play(`${SOLVE}\n${many}`);
      same(attack, honest, 0);
      expect(attack.grade.zero_reason).toBe('workspace has more than 20000 entries (the workspace entry cap)');
      expect(honest.grade.zero_reason).toBe(attack.grade.zero_reason);
    }, 300_000);

    it('after every refusal the env and the pool still grade: the reference scores 1', async () => {
      const ref = await play(SOLVE);
      expect(ref.reward).toBeCloseTo(1, 9);
    }, 120_000);
  });
}
