// The typed failure of making a repository environment's image (built from a recipe: repo-env-build.ts; pulled and
// checked: repo-env-prebuilt.ts). A module of its own so that both build paths throw it without importing each other.

export type RepoEnvBuildStep =
  | 'resolve'
  | 'download'
  | 'hash'
  | 'build'
  | 'base_image'
  | 'toolchain'
  /** A prebuilt image: the registry cannot be reached or refuses the pull (a missing or unknown image or digest). */
  | 'pull'
  /** A prebuilt image: what was pulled is not the pinned digest. */
  | 'digest'
  /** A prebuilt image lacks what grading needs, or carries what the judge does not run (hooks, preloads, volumes). */
  | 'check'
  /** A prebuilt image holds a copy of a task's fixed code, or history that can (its .git). */
  | 'leak';

/** An environment cannot be made: names the requirement (or image), the step that failed and, for a refusal, the path. */
export class RepoEnvBuildError extends Error {
  override name = 'RepoEnvBuildError';
  constructor(
    readonly step: RepoEnvBuildStep,
    message: string,
    /** The file of the image a refusal is about (absolute). */
    readonly path?: string,
  ) {
    super(message);
  }
}
