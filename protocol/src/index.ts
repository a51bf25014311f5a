/**
 * The sandgym protocol (major PROTOCOL_VERSION, see version.ts): schemas, generated types, error registry,
 * codec, validators and spaces.
 * Browser-safe (no node: imports). Import from here, not from the individual files.
 */
export * from './generated/types.js';
export { SCHEMAS, type SchemaFile } from './generated/schemas.js';
export {
  CLOSE_CODES,
  ERROR_CLOSE_CODES,
  ERROR_CODES,
  ERROR_REGISTRY,
  ProtocolError,
  protocolError,
  errorOfCloseCode,
  formatErrorMessage,
  fromWireError,
  isErrorCode,
  isProtocolError,
  type ClosingErrorCode,
  type ErrorRegistryEntry,
  type WireErrorBody,
} from './errors.js';
export {
  DEFAULT_MAX_MESSAGE_BYTES,
  MAX_MSGPACK_DEPTH,
  decode,
  decodeFrame,
  decodeJson,
  decodeMsgpack,
  encode,
  encodeCheckedFrame,
  encodeFrame,
  encodeJson,
  encodeMsgpack,
  findUnencodable,
  isEncodable,
  isValidUtf8,
  refusedRequestId,
  type DecodeOptions,
  type Encoding,
  type FrameData,
} from './codec.js';
export {
  REQUEST_TYPES,
  clipPath,
  describeAjvError,
  extractRequestId,
  matchesSpaceSchema,
  validateEnvSpec,
  validateRequest,
  validateResult,
  validateServerMessage,
  type RequestType,
  type ResultByType,
  type Validation,
} from './validate.js';
export {
  DTYPE_RANGE,
  checkSpace,
  isIntegerDtype,
  makeInvalidSamples,
  mulberry32,
  sampleSpace,
  validateSpaceDefinition,
  type InvalidSample,
  type Rng,
  type SpaceViolation,
} from './space.js';
export { compileUserSchema } from './ajv.js';

export { PROTOCOL_VERSION, PROTOCOL_VERSIONS, SCHEMA_ID_PREFIX, wsPath } from './version.js';
