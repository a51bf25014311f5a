// Public surface of the coding-task machinery (task sets, grading, rubric) for code-v0 and the CLI.
export * from './task-types.js';
export {
  loadTask,
  loadTaskSets,
  readTree,
  validateTaskSpec,
  TaskLoadError,
  TaskAccessError,
  TaskSet,
  MAX_TASK_FILE_BYTES,
  type LoadOptions,
} from './task-loader.js';
export { taskContentHash, normaliseInstruction, normaliseTestText, sha256Hex } from './task-hash.js';
export * from './leakage.js';
export * from './report.js';
export * from './rubric.js';
export * from './workspace-tar.js';
export * from './workspace-filter.js';
export * from '../workspace/capture.js';
export * from './grader-plan.js';
export * from './grade.js';
export * from './agents.js';
export * from './validate.js';
export { createCodeEnv, confinePath, capText, CODE_ENV_ID, type CodeEnvOptions } from './code-env.js';
export { codeEnvFromConfig, SHIPPED_TASKS_DIR, ALL_SPLITS } from './server-env.js';
