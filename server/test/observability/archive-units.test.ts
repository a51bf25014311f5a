// The archive's pure parts: malformed and hostile lines are refused with the file, line and field;
// object names sort by time and differ per writer; hidden-test keys are stripped; what rescore skips.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { rescorable } from '../../src/cli/rescore.js';
import { ArchiveFormatError, parseEpisodeLine, type EpisodeRecord } from '../../src/observability/archive/format.js';
import { parseObject } from '../../src/observability/archive/reader.js';
import { stripInfo } from '../../src/observability/archive/recorder.js';
import { parseS3Url } from '../../src/observability/archive/store.js';
import { newInstanceId, objectName } from '../../src/observability/archive/writer.js';

const good: EpisodeRecord = {
  format: 'sandgym.episode/1',
  episode_id: 'e_1',
  server: { instance: 'x', version: '0' },
  session_id: 's_1',
  connection_id: 'c_1',
  env_id: 'test/counter-v0',
  kwargs: {},
  task: null,
  seed: 1,
  options: {},
  started_at: '2026-12-01T00:00:00.000Z',
  ended_at: '2026-12-01T00:00:01.000Z',
  end: 'terminated',
  outcome: 'success',
  score: 1,
  success: true,
  return: 1,
  length: 1,
  reset: { observation: 0, info: {}, duration_ms: 1 },
  steps: [{ step: 0, action: 1, observation: 1, reward: 1, terminated: true, truncated: false, info: {}, duration_ms: 1, t: 0 }],
  request_errors: [],
  grade: null,
  grader: null,
};

describe('archive lines', () => {
  it('a well-formed line parses', () => {
    expect(parseEpisodeLine(JSON.stringify(good), 'f:1').episode_id).toBe('e_1');
  });

  it.each([
    ['not JSON', '{"format":', /f:3: not JSON/],
    ['an array', '[1,2]', /f:3: expected a JSON object/],
    ['another format', JSON.stringify({ ...good, format: 'x/1' }), /format "x\/1" is not sandgym\.episode\/1/],
    ['no episode id', JSON.stringify({ ...good, episode_id: 7 }), /field episode_id must be a string/],
    ['an unknown end', JSON.stringify({ ...good, end: 'exploded' }), /field end must be one of/],
    ['an unknown outcome', JSON.stringify({ ...good, outcome: 'great' }), /field outcome must be one of/],
    ['a fractional seed', JSON.stringify({ ...good, seed: 1.5 }), /field seed must be an integer or null/],
    ['steps not an array', JSON.stringify({ ...good, steps: {} }), /field steps must be an array/],
    ['a step without action', JSON.stringify({ ...good, steps: [{ reward: 1, terminated: true, truncated: false }] }), /field steps\[0\] must be a step/],
    ['a task without id', JSON.stringify({ ...good, task: { split: 'train' } }), /field task must be null or/],
    ['a __proto__ key', `{"__proto__": {"polluted": true}, ${JSON.stringify(good).slice(1)}`, null],
  ])('%s is refused with file, line and field', (_name, line, message) => {
    if (message === null) {
      // JSON.parse makes __proto__ an own key; nothing reaches Object.prototype.
      parseEpisodeLine(line, 'f:3');
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      return;
    }
    expect(() => parseEpisodeLine(line, 'f:3')).toThrow(ArchiveFormatError);
    expect(() => parseEpisodeLine(line, 'f:3')).toThrow(message);
  });

  it('an object: gzip or plain JSONL, blank lines skipped, the bad line named', async () => {
    const text = `${JSON.stringify(good)}\n\n${JSON.stringify({ ...good, episode_id: 'e_2' })}\n`;
    expect((await parseObject(gzipSync(text), 'o')).map((r) => r.episode_id)).toEqual(['e_1', 'e_2']);
    expect((await parseObject(Buffer.from(text), 'o')).length).toBe(2);
    await expect(parseObject(gzipSync(`${JSON.stringify(good)}\nnope\n`), 'o')).rejects.toThrow('o:2: not JSON');
    // A truncated gzip stream (a copy cut short) is an ArchiveFormatError, not a crash.
    await expect(parseObject(gzipSync(text).subarray(0, 20), 'o')).rejects.toThrow(ArchiveFormatError);
  });
});

describe('object names and locations', () => {
  it('sort by time, then instance and sequence; two writers never share a name', () => {
    const a = newInstanceId();
    const b = newInstanceId();
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(a).not.toBe(b);
    const t = new Date('2026-12-01T23:59:59.999Z');
    const u = new Date('2026-12-02T00:00:00.000Z');
    expect(objectName(t, a, 1)).toBe(`2026/12/01/20261201T235959999Z-${a}-000001.jsonl.gz`);
    const names = [objectName(u, a, 3), objectName(t, b, 2), objectName(t, a, 1)];
    expect([...names].sort()).toEqual([objectName(t, a, 1), objectName(t, b, 2), objectName(u, a, 3)].sort());
    expect([...names].sort()[2]).toBe(objectName(u, a, 3));
  });

  it('s3 URLs: bucket rules, prefixes without dot segments', () => {
    expect(parseS3Url('/data/archive')).toBeNull();
    expect(parseS3Url('s3://my-bucket')).toEqual({ bucket: 'my-bucket', prefix: '' });
    expect(parseS3Url('s3://my-bucket//runs/a/')).toEqual({ bucket: 'my-bucket', prefix: 'runs/a' });
    for (const bad of ['s3://', 's3://Upper', 's3://a', 's3://b_b/x', 's3://bucket/../x']) expect(parseS3Url(bad)).toBeInstanceOf(Error);
  });
});

describe('hidden-test text', () => {
  it('a grading report loses log_tail; other info is kept as is (not copied)', () => {
    const info = { grade: { score: 0.5, log_tail: 'assert secret() == 42' }, reward_components: { tests: 0.5 } };
    const out = stripInfo(info);
    expect(out).toEqual({ grade: { score: 0.5 }, reward_components: { tests: 0.5 } });
    expect(info.grade.log_tail).toBe('assert secret() == 42');
    const plain = { grade: { score: 1 } };
    expect(stripInfo(plain)).toBe(plain);
  });
});

describe('what rescore re-grades', () => {
  const tar = Buffer.from('not really a tar');
  const sha = createHash('sha256').update(tar).digest('hex');
  const rec = (over: Partial<EpisodeRecord>): EpisodeRecord => ({
    ...good,
    env_id: 'code-v0',
    task: { id: 't1', split: 'train', content_hash: 'h' },
    grade: { score: 1 },
    final_workspace: { encoding: 'tar+base64', bytes: tar.byteLength, sha256: sha, data: tar.toString('base64') },
    ...over,
  });
  const tasks = new Map([['t1', { spec: { id: 't1' } } as never]]);

  it('skips what it cannot re-grade, with the reason', () => {
    expect(rescorable(rec({ final_workspace: undefined }), tasks)).toMatchObject({ reason: 'no archived workspace' });
    expect(rescorable(rec({ final_workspace: { omitted: 'larger than 8 bytes', bytes: 9 } }), tasks)).toMatchObject({
      reason: 'workspace not archived (larger than 8 bytes)',
    });
    expect(rescorable(rec({ grade: null }), tasks)).toMatchObject({ reason: 'no archived grade' });
    expect(rescorable(rec({ task: { id: 'gone', split: 'train', content_hash: null } }), tasks)).toMatchObject({ reason: 'task gone is not in the task set' });
    expect(
      rescorable(rec({ final_workspace: { encoding: 'tar+base64', bytes: tar.byteLength, sha256: '0'.repeat(64), data: tar.toString('base64') } }), tasks),
    ).toMatchObject({ reason: expect.stringContaining('corrupt') });
    const ok = rescorable(rec({}), tasks);
    expect('tar' in ok && Buffer.from(ok.tar).equals(tar) && ok.old === 1).toBe(true);
  });
});
