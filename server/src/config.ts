// Server configuration: defaults < JSON config file < CLI flags. Validated with ajv so a typo
// fails at startup with the offending key named, never as a surprise mid-training.
// Over 500 lines on purpose: every option's schema, default and cross-check sit together, so an option is
// read, defaulted and validated in one place (split by topic, a new option would touch several files).
import { readFile } from 'node:fs/promises';
import { Ajv } from 'ajv';
import type { SandboxLimitName, SandboxLimits } from '#sandbox-contract/index.js';

export interface ServerConfig {
  host: string;
  port: number;
  tokens: string[];
  fixtures: boolean;
  env_modules: string[];
  max_message_bytes: number;
  /** Per connection. */
  max_sessions_per_connection: number;
  /** Server-wide. */
  max_sessions: number;
  max_batch: number;
  step_timeout_ms: number;
  /** Also bounds make (env creation). */
  reset_timeout_ms: number;
  /** A session with no request for this long is closed by the server. */
  idle_timeout_ms: number;
  /** WebSocket ping interval; a connection that misses a pong is terminated. */
  heartbeat_ms: number;
  log_level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  // ---- connection hardening (documented in protocol/PROTOCOL.md §8) ----
  /** A connection that has not completed hello this long after the upgrade is closed (CONNECTION_TIMEOUT, 4408). */
  handshake_timeout_ms: number;
  /** Bytes a connection may send before its hello succeeds (all frames and fragments together); beyond: TOO_LARGE, 1009. */
  handshake_max_bytes: number;
  /** A message (one frame or its fragments) left unfinished this long is refused: CONNECTION_TIMEOUT, 4408. */
  message_timeout_ms: number;
  /** WebSocket connections server-wide; a new upgrade beyond it gets HTTP 503 (CAPACITY). */
  max_connections: number;
  /** WebSocket connections per remote address; beyond it HTTP 503 (CAPACITY). */
  max_connections_per_address: number;
  /** Connections that have not completed hello, server-wide; beyond it HTTP 503 (CAPACITY). */
  max_pending_handshakes: number;
  /** Requests waiting (queued, not running) per session; beyond it CAPACITY (details.limit 'max_queued_requests'). */
  max_queued_requests: number;
  /** Frame bytes of the requests waiting per session; beyond it CAPACITY (details.limit 'max_queued_bytes'). */
  max_queued_bytes: number;
  /** Unsent reply bytes server-wide; a connection not reading its replies is terminated when the total passes it. */
  max_buffered_output_bytes: number;
  /** How long the sessions of a connection that dropped wait for a resume (PROTOCOL.md §5a); 0 = no resume. */
  resume_grace_ms: number;
  /** On SIGTERM, how long episodes already running may go on before the rest are closed (SHUTTING_DOWN);
   *  meanwhile readiness is false and new connections, sessions and episodes are refused. 0 = at once. */
  drain_grace_ms: number;
  /** Allows binding a non-loopback host without tokens. */
  insecure: boolean;
  /** Sandbox driver; unset or 'none' = no sandboxes (envs declaring one get UNSUPPORTED at make).
   *  The CLI defaults to 'auto'; buildApp (tests, embedding) defaults to none. */
  driver?: 'docker' | 'local' | 'kubernetes' | 'auto' | 'none';
  /** Warm pool sizing per (image, limits) pool: min_idle, max_total, refill_concurrency. */
  pools?: PoolsConfig;
  /** Sandbox layer options (limits, driver knobs); see SandboxConfig and docs/SANDBOX.md. */
  sandbox?: SandboxConfig;
  /** code-v0 task-set directories or `@functions` / `@repository` (shipped sets); empty = both shipped sets. */
  tasks: string[];
  /** Task splits sessions may ask for (code-v0). Default all; a session gets eval only when it asks. */
  splits: ('train' | 'eval')[];
  /** Prometheus metrics at GET /metrics and per-task statistics (docs/OBSERVABILITY.md). Default true. */
  metrics?: boolean;
  /** Also nodejs_gc_duration_seconds in /metrics (a GC observer: dearer GCs, docs/OBSERVABILITY.md). Default false. */
  gc_metrics?: boolean;
  /** Log lines as JSON or pretty text for a terminal; unset: pretty on a TTY, JSON otherwise. */
  log_format?: 'pretty' | 'json';
  /** The admission queue in front of the sandboxes (docs/SCHEDULING.md, PROTOCOL.md §6a); on by default with a driver. */
  scheduling?: SchedulingConfig;
}

/** A grant: which priority classes a client may use, and its fair-share weight. */
export interface SchedulingGrant {
  classes: string[];
  weight?: number;
}

export interface SchedulingConfig {
  /** false: no admission queue (sessions wait in the pools' FIFO, as before; capabilities.scheduling false). */
  enabled?: boolean;
  /** Priority classes, highest first. */
  classes?: string[];
  /** The class of a request that names none (when its grant allows it, else the highest granted class below it). */
  default_class?: string;
  /** Classes whose requests are preemptible whatever the request says. */
  preemptible_classes?: string[];
  max_queued?: number;
  max_queued_per_client?: number;
  /** Creation retries of one admission before SANDBOX_ERROR. */
  retry_budget?: number;
  max_group_size?: number;
  /** The longest queue_timeout_ms honoured, and the wait of a request that names none. */
  max_queue_timeout_ms?: number;
  /** How long higher-priority work waits before a preemptible holder is reclaimed for it. */
  preempt_grace_ms?: number;
  /** Per-token grants: the token's sha256 (hex), never the token. */
  grants?: (SchedulingGrant & { token_sha256: string })[];
  /** The grant of a client no grant names (every client on a server without tokens). */
  default_grant?: SchedulingGrant;
}

export const DEFAULT_SCHEDULING = {
  classes: ['eval', 'train-batch-closing', 'train', 'background'],
  default_class: 'train',
  preemptible_classes: ['background'],
  max_queued: 100_000,
  max_queued_per_client: 20_000,
  retry_budget: 2,
  max_group_size: 64,
  max_queue_timeout_ms: 600_000,
  preempt_grace_ms: 5_000,
} as const;

/** A scheduling section with every default filled in, checked for consistency (ConfigError names the key). */
export interface ResolvedScheduling {
  classes: string[];
  default_class: string;
  preemptible_classes: string[];
  max_queued: number;
  max_queued_per_client: number;
  retry_budget: number;
  max_group_size: number;
  max_queue_timeout_ms: number;
  preempt_grace_ms: number;
  /** token sha256 hex -> grant */
  grants: Map<string, Required<SchedulingGrant>>;
  default_grant: Required<SchedulingGrant>;
}

/**
 * Fills the defaults in and checks what the JSON schema cannot: classes unique, every class named
 * elsewhere configured, grants unique per token. Throws ConfigError with the key under `scheduling/`.
 */
export function resolveScheduling(sc: SchedulingConfig = {}): ResolvedScheduling {
  const classes = [...(sc.classes ?? DEFAULT_SCHEDULING.classes)];
  const known = new Set<string>();
  for (const c of classes) {
    if (known.has(c)) throw new ConfigError(`config: scheduling.classes lists '${c}' twice`, 'scheduling/classes');
    known.add(c);
  }
  const check = (key: string, list: readonly string[]): void => {
    for (const c of list)
      if (!known.has(c))
        throw new ConfigError(`config: ${key.replaceAll('/', '.')} names '${c}', which is not in scheduling.classes (${classes.join(', ')})`, key);
  };
  const defaultClass =
    sc.default_class ??
    (sc.classes
      ? classes.includes(DEFAULT_SCHEDULING.default_class)
        ? DEFAULT_SCHEDULING.default_class
        : (classes[classes.length - 1] as string)
      : DEFAULT_SCHEDULING.default_class);
  check('scheduling/default_class', [defaultClass]);
  const preemptible = [...(sc.preemptible_classes ?? (sc.classes ? [] : DEFAULT_SCHEDULING.preemptible_classes))];
  check('scheduling/preemptible_classes', preemptible);
  const maxQueued = sc.max_queued ?? DEFAULT_SCHEDULING.max_queued;
  const perClient = sc.max_queued_per_client ?? Math.min(maxQueued, DEFAULT_SCHEDULING.max_queued_per_client);
  if (perClient > maxQueued)
    throw new ConfigError(
      `config: scheduling.max_queued_per_client (${perClient}) exceeds scheduling.max_queued (${maxQueued})`,
      'scheduling/max_queued_per_client',
    );
  // By default a client gets the default class and those below it: eval (above) is for the tokens an operator grants it.
  const from = classes.indexOf(defaultClass);
  const defaultGrant = { classes: [...(sc.default_grant?.classes ?? classes.slice(from))], weight: sc.default_grant?.weight ?? 1 };
  check('scheduling/default_grant/classes', defaultGrant.classes);
  const grants = new Map<string, Required<SchedulingGrant>>();
  (sc.grants ?? []).forEach((g, i) => {
    const token = g.token_sha256.toLowerCase();
    if (grants.has(token))
      throw new ConfigError(`config: scheduling.grants[${i}] repeats token_sha256 ${token.slice(0, 12)}…`, `scheduling/grants/${i}/token_sha256`);
    check(`scheduling/grants/${i}/classes`, g.classes);
    grants.set(token, { classes: [...g.classes], weight: g.weight ?? 1 });
  });
  return {
    classes,
    default_class: defaultClass,
    preemptible_classes: preemptible,
    max_queued: maxQueued,
    max_queued_per_client: perClient,
    retry_budget: sc.retry_budget ?? DEFAULT_SCHEDULING.retry_budget,
    max_group_size: sc.max_group_size ?? DEFAULT_SCHEDULING.max_group_size,
    max_queue_timeout_ms: sc.max_queue_timeout_ms ?? DEFAULT_SCHEDULING.max_queue_timeout_ms,
    preempt_grace_ms: sc.preempt_grace_ms ?? DEFAULT_SCHEDULING.preempt_grace_ms,
    grants,
    default_grant: defaultGrant,
  };
}

export interface PoolsConfig {
  min_idle?: number;
  max_total?: number;
  refill_concurrency?: number;
  /** Size each pool's idle target from demand (default true; docs/SANDBOX.md "Warm pools"). */
  autosize?: boolean;
  /** The demand EWMA's time constant (ms, default 10,000). */
  demand_window_ms?: number;
  /** How long a pool remembers a burst of resets (time constant, ms, default 300,000; 0: off). */
  burst_memory_ms?: number;
  /** Idle sandboxes across all pools at most (default 64; docs/SANDBOX.md "Many images"). */
  max_idle_total?: number;
}

export interface SandboxConfig {
  /** Limits of a sandbox whose env asks for none (merged over the built-in defaults). */
  limits_default?: Partial<SandboxLimits>;
  /** The most any env may ask for (merged over the built-in maxima). */
  limits_max?: Partial<SandboxLimits>;
  /** A request above a maximum: 'refuse' (INVALID_ARGUMENT, default) or 'clamp'. */
  limit_policy?: 'refuse' | 'clamp';
  /** Docker: 'channel' (default, persistent shell) or 'docker-exec' (one exec per command). */
  exec_path?: 'channel' | 'docker-exec';
  /** Docker: uid:gid the sandbox runs as (default 65534:65534); never 0. */
  user?: string;
  /** Docker: OCI runtime, e.g. 'runsc' when gVisor is configured in daemon.json. */
  runtime?: string;
  /** Docker: a sandbox whose server stops refreshing its lease kills itself after this long. */
  lease_ttl_ms?: number;
  /** Docker: container creations in flight at once. */
  create_concurrency?: number;
  /** `driver: kubernetes`: where and how sandbox pods run (docs/SANDBOX.md, "Kubernetes"). */
  kubernetes?: KubernetesSandboxConfig;
}

export interface KubernetesSandboxConfig {
  /** Default: the service account's namespace in a pod, else the kubeconfig context's, else `default`. */
  namespace?: string;
  /** Kubeconfig file; default in-cluster (service account) in a pod, else $KUBECONFIG or ~/.kube/config. */
  kubeconfig?: string;
  context?: string;
  runtime_class_name?: string;
  /** Default IfNotPresent. */
  image_pull_policy?: 'Always' | 'IfNotPresent' | 'Never';
  node_selector?: Record<string, string>;
  tolerations?: {
    key?: string;
    operator?: 'Exists' | 'Equal';
    value?: string;
    effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
    toleration_seconds?: number;
  }[];
  /** Image of the init container that removes the pod's network (needs `ip`); default sandgym/busybox:1. */
  network_init_image?: string;
  /** CPU request as a fraction of the cpus limit (default 0.1); memory is always requested in full. */
  cpu_request_ratio?: number;
  /** Pod creations in flight at once (default 8). */
  create_concurrency?: number;
}

export const DEFAULT_CONFIG: ServerConfig = {
  host: '127.0.0.1',
  port: 8765,
  tokens: [],
  fixtures: false,
  env_modules: [],
  max_message_bytes: 16 * 1024 * 1024,
  max_sessions_per_connection: 1024,
  max_sessions: 10_000,
  max_batch: 1024,
  step_timeout_ms: 60_000,
  reset_timeout_ms: 120_000,
  idle_timeout_ms: 15 * 60_000,
  heartbeat_ms: 30_000,
  log_level: 'info',
  handshake_timeout_ms: 10_000,
  handshake_max_bytes: 64 * 1024,
  message_timeout_ms: 60_000,
  max_connections: 4096,
  max_connections_per_address: 256,
  max_pending_handshakes: 256,
  max_queued_requests: 4096,
  max_queued_bytes: 64 * 1024 * 1024,
  max_buffered_output_bytes: 512 * 1024 * 1024,
  resume_grace_ms: 0,
  drain_grace_ms: 0,
  insecure: false,
  tasks: [],
  splits: ['train', 'eval'],
};

const posInt = { type: 'integer', minimum: 1, maximum: 2 ** 31 - 1 };

// One entry per limit of the sandbox contract: `satisfies` fails to compile when a limit is added to
// (or removed from) SandboxLimits without its bounds here, so config keys cannot drift from the contract.
const SANDBOX_LIMIT_BOUNDS = {
  memory_mb: { type: 'integer', minimum: 16, maximum: 1024 * 1024 },
  cpus: { type: 'number', exclusiveMinimum: 0, maximum: 1024 },
  pids: { type: 'integer', minimum: 8, maximum: 4_194_304 },
  disk_mb: { type: 'integer', minimum: 1, maximum: 1024 * 1024 },
  nofile: { type: 'integer', minimum: 64, maximum: 1_048_576 },
  timeout_s: { type: 'number', exclusiveMinimum: 0, maximum: 7 * 24 * 3600 },
} as const satisfies Record<SandboxLimitName, object>;

const SANDBOX_LIMITS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: SANDBOX_LIMIT_BOUNDS,
} as const;

const CLASS_NAME = { type: 'string', minLength: 1, maxLength: 64, pattern: '^[a-z0-9][a-z0-9_-]*$' } as const;
const CLASS_LIST = { type: 'array', minItems: 1, maxItems: 64, items: CLASS_NAME } as const;
// A weight is a share ratio: bounded so that no grant can make the fair-queuing tags degenerate.
const WEIGHT = { type: 'number', minimum: 0.001, maximum: 1_000_000 } as const;

const SCHEDULING_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: { type: 'boolean' },
    classes: CLASS_LIST,
    default_class: CLASS_NAME,
    preemptible_classes: { type: 'array', maxItems: 64, items: CLASS_NAME },
    max_queued: { type: 'integer', minimum: 1, maximum: 10_000_000 },
    max_queued_per_client: { type: 'integer', minimum: 1, maximum: 10_000_000 },
    retry_budget: { type: 'integer', minimum: 0, maximum: 100 },
    max_group_size: { type: 'integer', minimum: 1, maximum: 65_536 },
    max_queue_timeout_ms: { type: 'integer', minimum: 0, maximum: 7 * 24 * 3600_000 },
    preempt_grace_ms: { type: 'integer', minimum: 0, maximum: 24 * 3600_000 },
    grants: {
      type: 'array',
      maxItems: 100_000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['token_sha256', 'classes'],
        properties: { token_sha256: { type: 'string', pattern: '^[0-9a-fA-F]{64}$' }, classes: CLASS_LIST, weight: WEIGHT },
      },
    },
    default_grant: {
      type: 'object',
      additionalProperties: false,
      required: ['classes'],
      properties: { classes: CLASS_LIST, weight: WEIGHT },
    },
  },
} as const;

export const CONFIG_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    $schema: { type: 'string' },
    host: { type: 'string', minLength: 1 },
    port: { type: 'integer', minimum: 0, maximum: 65535 },
    // A token is sent as `Authorization: Bearer <token>` or in hello: whitespace in it could never be
    // matched from the header, and a blank one is no secret, so neither is accepted.
    tokens: { type: 'array', items: { type: 'string', minLength: 1, pattern: '^\\S+$' } },
    fixtures: { type: 'boolean' },
    env_modules: { type: 'array', items: { type: 'string', minLength: 1 } },
    max_message_bytes: { type: 'integer', minimum: 256, maximum: 1024 * 1024 * 1024 },
    max_sessions_per_connection: posInt,
    max_sessions: posInt,
    max_batch: posInt,
    step_timeout_ms: posInt,
    reset_timeout_ms: posInt,
    idle_timeout_ms: posInt,
    heartbeat_ms: posInt,
    log_level: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
    handshake_timeout_ms: posInt,
    // Room for a hello with a long token; above 1 MiB it would stop being a pre-auth budget.
    handshake_max_bytes: { type: 'integer', minimum: 1024, maximum: 1024 * 1024 },
    message_timeout_ms: posInt,
    max_connections: posInt,
    max_connections_per_address: posInt,
    max_pending_handshakes: posInt,
    max_queued_requests: posInt,
    max_queued_bytes: { type: 'integer', minimum: 1024, maximum: 2 ** 40 },
    max_buffered_output_bytes: { type: 'integer', minimum: 1024 * 1024, maximum: 2 ** 40 },
    // Up to a day: sandboxes are held meanwhile, so an unbounded grace would be a leak by configuration.
    resume_grace_ms: { type: 'integer', minimum: 0, maximum: 24 * 3600_000 },
    drain_grace_ms: { type: 'integer', minimum: 0, maximum: 24 * 3600_000 },
    insecure: { type: 'boolean' },
    driver: { enum: ['docker', 'local', 'kubernetes', 'auto', 'none'] },
    pools: {
      type: 'object',
      // A misspelt pool key used to be accepted and do nothing.
      additionalProperties: false,
      properties: {
        min_idle: { type: 'integer', minimum: 0 },
        max_total: posInt,
        refill_concurrency: posInt,
        autosize: { type: 'boolean' },
        demand_window_ms: posInt,
        burst_memory_ms: { type: 'integer', minimum: 0 },
        max_idle_total: { type: 'integer', minimum: 0 },
      },
    },
    sandbox: {
      type: 'object',
      additionalProperties: false,
      properties: {
        limits_default: SANDBOX_LIMITS_SCHEMA,
        limits_max: SANDBOX_LIMITS_SCHEMA,
        limit_policy: { enum: ['refuse', 'clamp'] },
        exec_path: { enum: ['channel', 'docker-exec'] },
        // uid[:gid], numeric, never root: names may not exist in minimal images.
        user: { type: 'string', pattern: '^[1-9][0-9]{0,9}(:[1-9][0-9]{0,9})?$' },
        runtime: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
        lease_ttl_ms: { type: 'integer', minimum: 10_000, maximum: 24 * 3600_000 },
        create_concurrency: { type: 'integer', minimum: 1, maximum: 64 },
        kubernetes: {
          type: 'object',
          additionalProperties: false,
          properties: {
            namespace: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$' },
            kubeconfig: { type: 'string', minLength: 1 },
            context: { type: 'string', minLength: 1 },
            runtime_class_name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$' },
            image_pull_policy: { enum: ['Always', 'IfNotPresent', 'Never'] },
            node_selector: { type: 'object', additionalProperties: { type: 'string', maxLength: 63 } },
            tolerations: {
              type: 'array',
              items: {
                type: 'object',
                additionalProperties: false,
                properties: {
                  key: { type: 'string' },
                  operator: { enum: ['Exists', 'Equal'] },
                  value: { type: 'string' },
                  effect: { enum: ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] },
                  toleration_seconds: { type: 'integer', minimum: 0 },
                },
              },
            },
            network_init_image: { type: 'string', minLength: 1 },
            cpu_request_ratio: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
            create_concurrency: { type: 'integer', minimum: 1, maximum: 64 },
          },
        },
      },
    },
    tasks: { type: 'array', items: { type: 'string', minLength: 1 } },
    splits: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: ['train', 'eval'] } },
    metrics: { type: 'boolean' },
    gc_metrics: { type: 'boolean' },
    log_format: { enum: ['pretty', 'json'] },
    scheduling: SCHEDULING_SCHEMA,
  },
} as const;

export class ConfigError extends Error {
  constructor(
    message: string,
    /** The offending key ('' when the whole document is wrong). */
    public readonly key: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

const ajv = new Ajv({ allErrors: false, strict: false });
const validateConfigDoc = ajv.compile(CONFIG_SCHEMA);

/** Throws ConfigError naming the bad key. `source` names where the values came from. */
export function validateConfigPartial(doc: unknown, source = 'config'): Partial<ServerConfig> {
  if (!validateConfigDoc(doc)) {
    const e = validateConfigDoc.errors?.[0];
    if (!e) throw new ConfigError(`${source}: invalid`, '');
    if (e.keyword === 'additionalProperties') {
      // Nested unknown keys are named by their path, e.g. 'sandbox/limits_max/memroy_mb'.
      const key = `${e.instancePath.slice(1)}${e.instancePath ? '/' : ''}${String((e.params as { additionalProperty: string }).additionalProperty)}`;
      throw new ConfigError(`${source}: unknown key '${key}'`, key);
    }
    const key = e.instancePath.replace(/^\//, '').split('/')[0] ?? '';
    if (!key) throw new ConfigError(`${source}: ${e.message ?? 'invalid'} (expected a JSON object)`, '');
    throw new ConfigError(`${source}: key '${key}' ${e.message ?? 'is invalid'}${e.instancePath.includes('/', 1) ? ` (at ${e.instancePath})` : ''}`, key);
  }
  const { $schema: _ignored, ...rest } = doc as Partial<ServerConfig> & { $schema?: string };
  return rest;
}

export async function loadConfigFile(path: string): Promise<Partial<ServerConfig>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`config file ${path}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, '');
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config file ${path}: not valid JSON (${(err as Error).message})`, '');
  }
  return validateConfigPartial(doc, `config file ${path}`);
}

/** Copies the keys of `from` whose value is not undefined (an unset option leaves the lower layer's). */
function assignDefined<T extends object>(to: T, from: Partial<T>): void {
  for (const k of Object.keys(from) as (keyof T)[]) {
    const v = from[k];
    if (v !== undefined) to[k] = v;
  }
}

/** Merge layers over the defaults and validate the result. Token lists are unioned. */
export function resolveConfig(...layers: Partial<ServerConfig>[]): ServerConfig {
  const out: ServerConfig = { ...DEFAULT_CONFIG, tokens: [], env_modules: [] };
  for (const layer of layers) {
    const { tokens, env_modules, ...rest } = layer;
    assignDefined(out, rest);
    if (tokens !== undefined) out.tokens = [...out.tokens, ...tokens];
    if (env_modules !== undefined) out.env_modules = [...out.env_modules, ...env_modules];
  }
  out.tokens = [...new Set(out.tokens)];
  validateConfigPartial(out);
  // Cross-key checks of scheduling (classes named in grants exist, ...) fail at startup too.
  if (out.scheduling) resolveScheduling(out.scheduling);
  return out;
}

/** Tokens from a file: one per line, blank lines and # comments ignored. */
export async function loadTokensFile(path: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`tokens file ${path}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, 'tokens');
  }
  const tokens = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  if (tokens.length === 0) throw new ConfigError(`tokens file ${path}: no tokens in it`, 'tokens');
  return tokens;
}

/** SANDGYM_TOKENS: comma separated. */
export function tokensFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  const raw = env.SANDGYM_TOKENS;
  if (!raw) return [];
  return raw
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
}
