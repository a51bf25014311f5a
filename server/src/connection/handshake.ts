// The handshake (PROTOCOL.md §4): who the client is (its bearer token, from the upgrade's
// Authorization header or hello's token), which protocol major both sides speak, and what the hello
// result offers this client (scheduling classes per token grant, a resume token). It keeps the
// client's identity afterwards: the resume principal, the fairness key, the tenant of its bytes.
import { PROTOCOL_VERSIONS, protocolError as err, type HelloRequest, type HelloResult, type ProtocolError } from '#protocol/index.js';
import type { TokenChecker } from '../transport/auth.js';
import { principalOf } from '../transport/resume.js';
import type { SchedulerDriver } from '../admission/scheduler-driver.js';

/** What the handshake reads of the server. */
export interface HandshakeHost {
  readonly tokens: TokenChecker;
  /** The hello result of the highest major this server speaks (built once per server). */
  readonly helloResult: HelloResult;
  readonly scheduler: SchedulerDriver | null;
}

/** hello's outcome: the result to send, or the error (and whether the connection ends: a bad token). */
export type HelloOutcome = { ok: true; result: HelloResult } | { ok: false; error: ProtocolError; unauthorized: boolean };

export class Handshake {
  private done = false;
  private authed: boolean;
  /** Digest of the token this connection authenticated with: its resume tokens are bound to it. */
  private principalDigest = principalOf(null);
  /** hello's client_group: the fairness key on a server without tokens (PROTOCOL.md §6a). */
  private clientGroup: string | undefined;

  constructor(
    private readonly host: HandshakeHost,
    /** The connection's id: its identity when there are no tokens and no client_group. */
    private readonly connectionId: string,
  ) {
    this.authed = !host.tokens.enabled;
  }

  /** hello succeeded (requests other than ping and hello are answered from here on). */
  get handshaken(): boolean {
    return this.done;
  }

  get principal(): Buffer {
    return this.principalDigest;
  }

  /** The upgrade's Authorization header, when it had one: false if the token is wrong (the connection ends). */
  authorizeHeader(authorization: string | undefined): boolean {
    if (!this.host.tokens.enabled || authorization === undefined) return true;
    if (!this.host.tokens.check(authorization)) return false;
    this.authed = true;
    this.principalDigest = principalOf(authorization);
    return true;
  }

  /**
   * hello: authenticates (if the header did not), picks the highest major both sides speak (none in
   * common leaves the connection open for another hello) and builds the result. `resumeToken` issues the
   * connection's resume token (null when the server offers no resume); it is called only on success.
   */
  hello(m: HelloRequest, resumeToken: () => string | null): HelloOutcome {
    if (this.done)
      return { ok: false, error: err('INVALID_MESSAGE', { reason: 'hello already received' }, { reason: 'hello already received' }), unauthorized: false };
    if (!this.authed) {
      const token = m.token;
      if (typeof token === 'string' && this.host.tokens.check(token)) {
        this.authed = true;
        this.principalDigest = principalOf(token);
      } else {
        const reason = token === undefined ? 'a bearer token is required' : 'invalid token';
        return { ok: false, error: err('UNAUTHORIZED', { reason }, { reason }), unauthorized: true };
      }
    }
    let version = 0;
    for (const v of m.versions) if (v > version && PROTOCOL_VERSIONS.includes(v)) version = v;
    if (version === 0) {
      const supported = [...PROTOCOL_VERSIONS];
      return { ok: false, error: err('UNSUPPORTED_VERSION', { supported }, { supported }), unauthorized: false };
    }
    this.done = true;
    this.clientGroup = m.client_group;
    const hello = this.host.helloResult;
    let result = version === hello.version ? hello : { ...hello, version };
    const drv = this.host.scheduler;
    if (drv !== null) {
      // Per connection: the classes depend on the token's grant.
      const { allowed, dflt } = drv.classesOf(this.schedClient(drv).grant);
      result = {
        ...result,
        capabilities: { ...result.capabilities, scheduling: true },
        limits: {
          ...result.limits,
          max_queue_timeout_ms: drv.config.max_queue_timeout_ms,
          max_group_size: drv.maxGroupSize,
          priority_classes: allowed,
          default_priority: dflt,
        },
      };
    }
    const token = resumeToken();
    if (token !== null) result = { ...result, resume_token: token };
    return { ok: true, result };
  }

  /**
   * Who the connection's sessions and bytes belong to (the archive's per-tenant cap, output budgets): the
   * token's digest on a server with tokens, else the hello's client_group or this connection.
   */
  tenant(): string {
    return this.host.tokens.enabled ? `token:${this.principalDigest.toString('hex').slice(0, 16)}` : `conn:${this.clientGroup ?? this.connectionId}`;
  }

  /** This connection's client key and grant in the scheduler: its token's with tokens, else its client_group or itself. */
  schedClient(drv: SchedulerDriver): ReturnType<SchedulerDriver['clientOf']> {
    return drv.clientOf(this.host.tokens.enabled ? this.principalDigest.toString('hex') : null, this.clientGroup, this.connectionId);
  }
}
