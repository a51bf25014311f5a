/** Loads the language-neutral vector files (protocol/vectors/) for the TS suites. */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const VECTORS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'vectors');

export function readVector<T>(rel: string): T {
  return JSON.parse(readFileSync(join(VECTORS_DIR, rel), 'utf8')) as T;
}

export function listVectors(sub: string): string[] {
  return readdirSync(join(VECTORS_DIR, sub))
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => `${sub}/${f}`);
}

export interface SchemaCase {
  name: string;
  frame?: unknown;
  raw_json?: string;
  raw_msgpack_hex?: string;
  valid: boolean;
  error?: string;
  path?: string;
  op?: string;
  code?: string;
}
export interface SchemaFile {
  description: string;
  direction: 'request' | 'server';
  cases: SchemaCase[];
}

export interface CodecFile {
  cases: { name: string; value: unknown; json: string; msgpack?: string }[];
  decode_only: { name: string; value: unknown; json?: string; msgpack?: string }[];
  refused: { name: string; encoding: 'json' | 'msgpack'; text?: string; hex?: string; error: string; max_bytes?: number }[];
}

export interface SpaceFile {
  cases: { name: string; space: unknown; samples: { value: unknown; valid: boolean; why?: string; path?: string }[] }[];
  invalid_spaces: { name: string; space: unknown; path?: string }[];
}

export interface TranscriptStep {
  send?: unknown;
  send_raw?: string;
  send_raw_hex?: string;
  invalid?: boolean;
  expect?: unknown;
  expect_any_order?: unknown[];
  expect_close?: number;
  note?: string;
}
export interface Transcript {
  name: string;
  description: string;
  server?: Record<string, unknown>;
  path?: string;
  encodings?: ('json' | 'msgpack')[];
  steps: TranscriptStep[];
}

export const hexToBytes = (hex: string): Uint8Array => Uint8Array.from(Buffer.from(hex, 'hex'));
export const bytesToHex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
