/**
 * Message validation with validators compiled once at module load (never per message).
 * validateRequest / validateServerMessage never throw; they return the typed message or a ProtocolError.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { protocolValidator } from './ajv.js';
import { ProtocolError, protocolError } from './errors.js';
import type {
  BatchResult,
  CloseResult,
  EnvSpec,
  GroupResult,
  HelloResult,
  ListEnvsResult,
  MakeResult,
  PingResult,
  Request,
  ResetResult,
  ResumeResult,
  ServerMessage,
  Space,
  StepResult,
} from './generated/types.js';

export type RequestType = Request['type'];

/** Result shape per request type. */
export interface ResultByType {
  hello: HelloResult;
  ping: PingResult;
  list_envs: ListEnvsResult;
  make: MakeResult;
  reset: ResetResult;
  step: StepResult;
  close: CloseResult;
  batch: BatchResult;
  resume: ResumeResult;
  group: GroupResult;
}

export const REQUEST_TYPES: readonly RequestType[] = ['hello', 'ping', 'list_envs', 'make', 'reset', 'step', 'close', 'batch', 'resume', 'group'];

const fileOf = (t: RequestType): string => t.replace('_', '-');

// Each request-<op>.json validator accepts only that op's request, a member of the Request union.
const REQUEST_VALIDATORS = new Map<string, ValidateFunction<Request>>(REQUEST_TYPES.map((t) => [t, protocolValidator<Request>(`request-${fileOf(t)}.json`)]));
const serverMessageValidator = protocolValidator<ServerMessage>('server-message.json');
const spaceValidator = protocolValidator('space.json');
// Result and env_spec validators serve tests, clients in debug mode and the env checker, not the
// per-message path: compile each on first use (then reuse) to keep module load fast.
const RESULT_VALIDATORS = new Map<string, ValidateFunction>();
let envSpecValidatorCache: ValidateFunction<EnvSpec> | undefined;

function resultValidator(type: string): ValidateFunction | undefined {
  let fn = RESULT_VALIDATORS.get(type);
  if (!fn && (REQUEST_TYPES as readonly string[]).includes(type)) {
    fn = protocolValidator(`result-${fileOf(type as RequestType)}.json`);
    RESULT_VALIDATORS.set(type, fn);
  }
  return fn;
}

export type Validation<T> = { ok: true; msg: T } | { ok: false; error: ProtocolError };

/** Longest `details.path` an error reply echoes (PROTOCOL.md §2): a path is built from the sender's keys. */
export const MAX_ERROR_PATH_CHARS = 256;

/**
 * A path clipped to MAX_ERROR_PATH_CHARS (with a trailing "…"): an unknown property name is the
 * sender's text, and echoing a 15 MiB name whole would make the reply larger than the frame limit.
 */
export function clipPath(path: string): string {
  return path.length <= MAX_ERROR_PATH_CHARS ? path : `${path.slice(0, MAX_ERROR_PATH_CHARS - 1)}…`;
}

/** JSON Pointer of the failing value (clipped) and a short reason, from the first ajv error. */
export function describeAjvError(errors: readonly ErrorObject[] | null | undefined): { path: string; reason: string } {
  const e = errors?.[0];
  if (!e) return { path: '', reason: 'invalid' };
  const p = e.params as Record<string, unknown>;
  if (e.keyword === 'additionalProperties' && typeof p.additionalProperty === 'string') {
    return { path: clipPath(`${e.instancePath}/${p.additionalProperty}`), reason: 'unexpected property' };
  }
  if (e.keyword === 'required' && typeof p.missingProperty === 'string') {
    return { path: clipPath(`${e.instancePath}/${p.missingProperty}`), reason: 'required property is missing' };
  }
  if (e.keyword === 'const') return { path: clipPath(e.instancePath), reason: `must be ${JSON.stringify(p.allowedValue)}` };
  if (e.keyword === 'enum') return { path: clipPath(e.instancePath), reason: `must be one of ${JSON.stringify(p.allowedValues)}` };
  return { path: clipPath(e.instancePath), reason: e.message ?? e.keyword };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function invalid(path: string, reason: string): ProtocolError {
  return protocolError('INVALID_MESSAGE', { reason: path ? `${path}: ${reason}` : reason }, { path, reason });
}

/**
 * The request's id when it is a valid uint32, else null: the id an error reply must carry even when
 * the rest of the request is invalid.
 */
export function extractRequestId(value: unknown): number | null {
  if (!isPlainObject(value)) return null;
  const id = value.id;
  return typeof id === 'number' && Number.isInteger(id) && id >= 0 && id <= 0xffffffff ? id : null;
}

/**
 * Checks a decoded client frame. Unknown `type` -> UNKNOWN_TYPE; anything else wrong -> INVALID_MESSAGE
 * with details {path (JSON Pointer), reason}.
 */
export function validateRequest(value: unknown): Validation<Request> {
  if (!isPlainObject(value)) return { ok: false, error: invalid('', 'a request must be a JSON object') };
  const type = value.type;
  if (typeof type !== 'string') {
    return { ok: false, error: invalid('/type', type === undefined ? 'required property is missing' : 'must be a string') };
  }
  const validator = REQUEST_VALIDATORS.get(type);
  if (!validator) return { ok: false, error: protocolError('UNKNOWN_TYPE', { type: type.slice(0, 64) }, { type: type.slice(0, 64) }) };
  if (validator(value)) return { ok: true, msg: value };
  const { path, reason } = describeAjvError(validator.errors);
  return { ok: false, error: invalid(path, reason) };
}

/** Checks a decoded server frame (result / error / event envelope). */
export function validateServerMessage(value: unknown): Validation<ServerMessage> {
  if (serverMessageValidator(value)) return { ok: true, msg: value };
  const { path, reason } = describeAjvError(serverMessageValidator.errors);
  return { ok: false, error: invalid(path, reason) };
}

/** Checks the `result` of a reply against the shape for the request type that produced it. */
export function validateResult<T extends RequestType>(type: T, result: unknown): Validation<ResultByType[T]> {
  const validator = resultValidator(type);
  if (!validator) return { ok: false, error: protocolError('UNKNOWN_TYPE', { type }, { type }) };
  if (validator(result)) return { ok: true, msg: result as ResultByType[T] };
  const { path, reason } = describeAjvError(validator.errors);
  return { ok: false, error: invalid(path, reason) };
}

/** Schema check of an env_spec (spaces are checked structurally only; see validateSpaceDefinition). */
export function validateEnvSpec(value: unknown): Validation<EnvSpec> {
  envSpecValidatorCache ??= protocolValidator<EnvSpec>('env-spec.json');
  if (envSpecValidatorCache(value)) return { ok: true, msg: value };
  const { path, reason } = describeAjvError(envSpecValidatorCache.errors);
  return { ok: false, error: invalid(path, reason) };
}

/** Schema-only check of a space definition (validateSpaceDefinition in space.ts adds semantic checks). */
export function matchesSpaceSchema(value: unknown): { path: string; reason: string } | null {
  return spaceValidator(value) ? null : describeAjvError(spaceValidator.errors);
}

export type { Space };
