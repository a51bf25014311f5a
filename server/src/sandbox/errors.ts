// Errors of the sandbox layer. The server maps SandboxGoneError to the env API's SandboxFailure
// (-> SANDBOX_ERROR) and SandboxLimitError to INVALID_ARGUMENT; this layer never imports envs.

/** The sandbox is dead or unusable (died, OOM, channel lost, destroyed). `reason` is user-facing. */
export class SandboxGoneError extends Error {
  override readonly name = 'SandboxGoneError';
  readonly code = 'SANDBOX_GONE';
  constructor(readonly reason: string) {
    super(`sandbox unavailable: ${reason}`);
  }
}

/** A requested limit exceeds the server maximum (or is not a positive number). */
export class SandboxLimitError extends Error {
  override readonly name = 'SandboxLimitError';
  readonly code = 'SANDBOX_LIMIT';
  constructor(
    readonly limit: string,
    message: string,
  ) {
    super(message);
  }
}

/** Bad exec request (e.g. an env var name that is not a shell identifier, a NUL byte in argv). */
export class SandboxRequestError extends Error {
  override readonly name = 'SandboxRequestError';
  readonly code = 'SANDBOX_REQUEST';
}

/**
 * An `acquire` gave up because its AbortSignal fired (the session closed while it waited for a sandbox).
 * Not a sandbox failure: the caller asked to stop waiting.
 */
export class SandboxAcquireAborted extends Error {
  override readonly name = 'SandboxAcquireAborted';
  readonly code = 'SANDBOX_ACQUIRE_ABORTED';
  constructor() {
    super('acquire aborted');
  }
}

/** The pool was closed (server shutting down): no sandbox will come from it. */
export class SandboxPoolClosedError extends Error {
  override readonly name = 'SandboxPoolClosedError';
  readonly code = 'SANDBOX_POOL_CLOSED';
  constructor(readonly pool: string) {
    super(`pool ${pool} is closed`);
  }
}

/**
 * The driver cannot give this sandbox the guarantees sandgym promises (e.g. bubblewrap without root
 * has one mapped uid, so the judge cannot be kept apart from the agent). Not retryable: the same server
 * will refuse again. `reason` names what is missing and how to get it.
 */
export class SandboxUnsupportedError extends Error {
  override readonly name = 'SandboxUnsupportedError';
  readonly code = 'SANDBOX_UNSUPPORTED';
  constructor(readonly reason: string) {
    super(reason);
  }
}

/**
 * No sandbox backend works here: no Docker daemon answers and/or bubblewrap cannot create namespaces.
 * `choice` is what was asked for (auto, docker, local); the message names what is missing. Typed so
 * the server can degrade (serve the envs that need no sandbox) and the CLI can exit "unavailable".
 */
export class NoSandboxDriverError extends Error {
  override readonly name = 'NoSandboxDriverError';
  readonly code = 'SANDBOX_NO_DRIVER';
  constructor(
    readonly choice: 'auto' | 'docker' | 'local' | 'kubernetes',
    message: string,
  ) {
    super(message);
  }
}

/**
 * The Docker driver was configured with an OCI runtime (`sandbox.runtime`, `--docker-runtime`) the daemon
 * does not know. Raised at start-up, never at the first acquire, and never degraded to another driver or
 * runtime: a server asked for gVisor must not quietly run sandboxes under runc.
 */
export class SandboxRuntimeError extends Error {
  override readonly name = 'SandboxRuntimeError';
  readonly code = 'SANDBOX_RUNTIME_UNKNOWN';
  constructor(
    readonly runtime: string,
    readonly known: string[],
  ) {
    super(
      `sandbox driver docker: the Docker daemon has no runtime '${runtime}' (it has: ${known.join(', ') || 'none'}); register it in /etc/docker/daemon.json and reload the daemon (for gVisor: scripts/docker-runsc.sh; docs/SANDBOX.md, "gVisor (runsc)")`,
    );
  }
}
