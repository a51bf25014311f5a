/**
 * The protocol's major version, declared once. Everything versioned derives from it: the schema `$id`s
 * (checked by protocol/scripts/generate.ts), the WebSocket path, hello negotiation and the TS client's
 * offered versions. No imports, so clients can take it without ajv or the schemas.
 */

/** The major version this package implements; a change on the wire that old clients would misread bumps it. */
export const PROTOCOL_VERSION = 2;
/** Every major this package speaks (hello answers with the highest one both sides list). */
export const PROTOCOL_VERSIONS: readonly number[] = [PROTOCOL_VERSION];
/** Prefix of every schema `$id` in protocol/schema/, e.g. `${SCHEMA_ID_PREFIX}request.json`. */
export const SCHEMA_ID_PREFIX = `https://sandgym.dev/protocol/v${PROTOCOL_VERSION}/`;

/** The WebSocket path of a major version: the major is in the path (`/v2/ws`). */
export function wsPath(major: number = PROTOCOL_VERSION): string {
  return `/v${major}/ws`;
}
