// Shared test helpers: load the shipped tasks once and grade a submission end to end on the host.
import { CaptureRefused, captureWorkspace } from '../../src/workspace/capture.js';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runScriptedAgent, seedWorkspace, type ScriptedAgent } from '../../src/code/agents.js';
import { gradeSubmission, type GradeResult } from '../../src/code/grade.js';
import { loadTaskSets } from '../../src/code/task-loader.js';
import type { LoadedTask } from '../../src/code/task-types.js';
import type { FileEntry } from '../../src/sandbox-api.js';
import { LocalProvider, LocalSandbox, hostPython } from './local-sandbox.js';

export const TASKS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../tasks');

let cached: Promise<LoadedTask[]> | undefined;
export function shippedTasks(): Promise<LoadedTask[]> {
  cached ??= loadTaskSets([TASKS_DIR]);
  return cached;
}

export async function shippedTask(id: string): Promise<LoadedTask> {
  const t = (await shippedTasks()).find((x) => x.spec.id === id);
  if (!t) throw new Error(`no shipped task ${id}`);
  return t;
}

export const PYTHON = hostPython();

/** Trusted (in-process format) copies of shipped tasks, for the tests of that path's own defences. */
export const TRUSTED_FIXTURES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'fixtures/trusted');

export async function trustedFixture(id: string): Promise<LoadedTask> {
  const t = (await loadTaskSets([TRUSTED_FIXTURES_DIR])).find((x) => x.spec.id === id);
  if (!t) throw new Error(`no trusted fixture ${id}`);
  return t;
}

export interface LocalGradeOptions {
  agent?: ScriptedAgent;
  /** Extra files the "agent" writes after the scripted agent ran (relative to the workspace). */
  files?: FileEntry[];
  /** Shell commands the "agent" runs in its workspace afterwards (symlinks, deletions...). */
  commands?: string[];
  tamperScan?: boolean;
}

/** Seeds a workspace, applies the agent, tars it and grades it in a fresh local "sandbox". */
export async function gradeLocally(task: LoadedTask, opts: LocalGradeOptions = {}): Promise<GradeResult> {
  if (!PYTHON) throw new Error('python3 with pytest is required');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-code-'));
  try {
    const agentSb = new LocalSandbox('agent', path.join(dir, 'agent'));
    await seedWorkspace(agentSb, task);
    await runScriptedAgent(agentSb, task, opts.agent ?? 'null', { workspace: agentSb.workspace, scratch: dir });
    if (opts.files) await agentSb.putFiles(opts.files);
    for (const cmd of opts.commands ?? []) {
      const r = await agentSb.exec({ argv: ['bash', '-c', cmd], cwd: agentSb.workspace });
      if (r.exit_code !== 0) throw new Error(`agent command failed: ${cmd}: ${r.stderr}`);
    }
    // The capture, as code-v0 takes it (a refusal grades to 0 with its reason).
    const tar = await captureWorkspace(agentSb, agentSb.workspace).catch((e: unknown) => {
      if (e instanceof CaptureRefused) return e;
      throw e;
    });
    const provider = new LocalProvider(path.join(dir, 'grade'));
    const result = await gradeSubmission(task, tar, {
      provider,
      requirement: { image: task.spec.image },
      workspace: provider.workspace,
      scratch: provider.scratch,
      python: PYTHON,
      node: process.execPath,
      path: process.env.PATH ?? '/usr/bin:/bin',
      // Harness tasks: the judge's dir inside this stand-in sandbox; one host uid, so the worker shares it.
      judgeDir: path.join(provider.root, 'judge'),
      sameUidWorker: true,
      ...(opts.tamperScan !== undefined ? { tamperScan: opts.tamperScan } : {}),
    });
    if (provider.acquired !== provider.released) throw new Error('grading sandbox not released');
    return result;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
