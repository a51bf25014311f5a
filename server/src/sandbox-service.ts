// The seam between the session layer and the sandbox layer (server/src/sandbox/). The server only
// knows this interface; the sandbox layer knows nothing of sessions or sockets.
import type { SandboxProvider } from '../../envs/src/sandbox-api.js';

export interface SessionSandboxes extends SandboxProvider {
  /** Called once when the session closes: releases every sandbox still held. Never throws. */
  releaseAll(): Promise<void>;
}

export type Readiness = { ready: true } | { ready: false; reason: string };

export interface SandboxService {
  /**
   * A provider bound to one session. `signal` aborts when the session closes; `onFailure` lets the
   * sandbox layer report that a held sandbox died outside any call (the server then closes the
   * session with a session_closed event, code SANDBOX_ERROR).
   */
  forSession(sessionId: string, signal: AbortSignal, onFailure: (reason: string) => void): SessionSandboxes;
  ready(): Readiness;
  close(): Promise<void>;
}
