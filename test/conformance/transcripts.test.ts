// Replays every protocol transcript (protocol/vectors/transcripts/*.json) against a live server over
// a real socket, once per encoding, with the contract's matchers. The transcripts are the protocol's
// executable spec; this is where the server is held to them.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ServerConfig } from '../../server/src/config.js';
import { RawSocket, type Encoding } from '../helpers/raw-socket.js';
import { REPO_ROOT, startServer, type TestServer } from '../helpers/server.js';
import { match, matchAnyOrder, substitute, type Captures } from './matcher.js';

interface TranscriptStep {
  send?: unknown;
  send_raw?: string;
  send_raw_hex?: string;
  expect?: unknown;
  expect_any_order?: unknown[];
  expect_close?: number;
}

interface Transcript {
  name: string;
  description?: string;
  server?: Partial<ServerConfig>;
  /** WebSocket path to open instead of the server's own (e.g. an older major's `/v1/ws`). */
  path?: string;
  encodings?: Encoding[];
  steps: TranscriptStep[];
}

const DIR = join(REPO_ROOT, 'protocol/vectors/transcripts');
// Unknown keys mean the format moved on without this harness: fail loudly rather than skip silently.
const STEP_KEYS = new Set(['send', 'send_raw', 'send_raw_hex', 'expect', 'expect_any_order', 'expect_close', 'note', 'invalid']);
const TOP_KEYS = new Set(['name', 'description', 'server', 'path', 'encodings', 'steps', 'note']);
const FRAME_TIMEOUT_MS = 10_000;

function loadTranscripts(): { file: string; t: Transcript }[] {
  let files: string[] = [];
  try {
    files = readdirSync(DIR)
      .filter((f) => f.endsWith('.json'))
      .sort();
  } catch {
    return [];
  }
  return files.map((file) => ({ file, t: JSON.parse(readFileSync(join(DIR, file), 'utf8')) as Transcript }));
}

// One server per distinct config: most transcripts share the default one.
const servers = new Map<string, Promise<TestServer>>();
function serverFor(overrides: Partial<ServerConfig> = {}): Promise<TestServer> {
  const key = JSON.stringify(overrides);
  let s = servers.get(key);
  if (!s) {
    s = startServer({ ...overrides, fixtures: true });
    servers.set(key, s);
  }
  return s;
}

afterAll(async () => {
  // allSettled: a server that failed to start already failed its transcripts.
  await Promise.allSettled([...servers.values()].map(async (s) => (await s).close()));
});

function show(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (x instanceof Uint8Array ? `<${x.byteLength} bytes>` : x));
}

async function nextFrame(sock: RawSocket, where: string): Promise<unknown> {
  const r = await sock.next(FRAME_TIMEOUT_MS).catch((e: Error) => {
    throw new Error(`${where}: ${e.message}`);
  });
  if (r.kind === 'close') throw new Error(`${where}: connection closed (${r.code} ${r.reason}) while a frame was expected`);
  if (r.decodeError) throw new Error(`${where}: undecodable frame (${r.decodeError})`);
  return r.message;
}

async function runStep(sock: RawSocket, step: TranscriptStep, encoding: Encoding, caps: Captures, where: string): Promise<void> {
  if (step.send !== undefined) {
    // An array of objects is a pipelined burst; any other array (e.g. [1, 2, 3]) is itself the frame.
    const burst = Array.isArray(step.send) && step.send.length > 0 && step.send.every((x) => typeof x === 'object' && x !== null && !Array.isArray(x));
    const sends = burst ? (step.send as unknown[]) : [step.send];
    for (const s of sends) sock.send(substitute(s, caps), encoding);
  }
  if (step.send_raw !== undefined) sock.sendRaw(step.send_raw);
  if (step.send_raw_hex !== undefined) sock.sendRaw(new Uint8Array(Buffer.from(step.send_raw_hex, 'hex')));
  if (step.expect !== undefined) {
    const frame = await nextFrame(sock, where);
    const r = match(step.expect, frame, caps);
    if (!r.ok) throw new Error(`${where}: ${r.path}: ${r.reason}\n  expected ${show(step.expect)}\n  got      ${show(frame)}`);
  }
  if (step.expect_any_order !== undefined) {
    const frames: unknown[] = [];
    for (let i = 0; i < step.expect_any_order.length; i++) frames.push(await nextFrame(sock, `${where} (frame ${i + 1} of ${step.expect_any_order.length})`));
    const r = matchAnyOrder(step.expect_any_order, frames, caps);
    if (!r.ok) throw new Error(`${where}: ${r.reason}\n  expected (any order) ${show(step.expect_any_order)}\n  got ${show(frames)}`);
  }
  if (step.expect_close !== undefined) {
    // Frames the server sends before closing (an error frame naming the cause) are allowed here.
    for (;;) {
      const r = await sock.next(FRAME_TIMEOUT_MS).catch((e: Error) => {
        throw new Error(`${where}: expected close ${step.expect_close}: ${e.message}`);
      });
      if (r.kind === 'close') {
        if (r.code !== step.expect_close) throw new Error(`${where}: expected close code ${step.expect_close}, got ${r.code} (${r.reason})`);
        break;
      }
    }
  }
}

function checkFormat(t: Transcript): void {
  for (const k of Object.keys(t)) if (!TOP_KEYS.has(k)) throw new Error(`${t.name}: unknown transcript key '${k}'`);
  t.steps.forEach((step, i) => {
    for (const k of Object.keys(step)) if (!STEP_KEYS.has(k)) throw new Error(`${t.name} step ${i}: unknown step key '${k}'`);
  });
}

async function replay(t: Transcript, encoding: Encoding): Promise<void> {
  checkFormat(t);
  const server = await serverFor(t.server);
  const url = new URL(server.url);
  if (t.path !== undefined) url.pathname = t.path;
  const sock = await RawSocket.open(url.href);
  const caps: Captures = {};
  try {
    for (const [i, step] of t.steps.entries()) {
      if (step.send_raw !== undefined && encoding === 'msgpack') continue;
      if (step.send_raw_hex !== undefined && encoding === 'json') continue;
      await runStep(sock, step, encoding, caps, `${t.name} [${encoding}] step ${i}`);
    }
    // Nothing unexpected may follow: a duplicate or stray reply is a protocol bug.
    await new Promise((r) => setTimeout(r, 25));
    const extra = sock.buffered;
    if (extra > 0 && !sock.closeInfo) {
      const frame = await sock.next(10);
      throw new Error(
        `${t.name} [${encoding}]: ${extra} unexpected frame(s) after the last step, first: ${show(frame.kind === 'frame' ? frame.message : frame)}`,
      );
    }
  } finally {
    await sock.close();
  }
}

const transcripts = loadTranscripts();

describe('protocol transcripts against the live server', () => {
  it('has transcripts to replay', () => {
    expect(transcripts.length, `no transcripts under ${DIR}`).toBeGreaterThan(0);
  });

  for (const { file, t } of transcripts) {
    for (const encoding of t.encodings ?? (['json', 'msgpack'] as Encoding[])) {
      it(`${file} (${encoding})`, async () => {
        await replay(t, encoding);
      });
    }
  }
});
