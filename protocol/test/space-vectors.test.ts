import { describe, expect, it } from 'vitest';
import { checkSpace, decodeJson, decodeMsgpack, encodeJson, encodeMsgpack, validateSpaceDefinition, type Space } from '../src/index.js';
import { readVector, type SpaceFile } from './vectors.js';

const file = readVector<SpaceFile>('spaces/spaces.json');

describe('space vectors', () => {
  for (const c of file.cases) {
    describe(c.name, () => {
      it('space definition is valid', () => expect(validateSpaceDefinition(c.space)).toBeNull());
      // Spaces travel inside env_spec: check the decoded copy too (both encodings).
      for (const [enc, space] of [
        ['as written', c.space],
        ['after json', decodeJson(encodeJson(c.space))],
        ['after msgpack', decodeMsgpack(encodeMsgpack(c.space))],
      ] as const) {
        for (const s of c.samples) {
          const label = s.valid ? 'valid' : `invalid (${s.why ?? ''})`;
          it(`${enc}: ${label}: ${JSON.stringify(s.value)?.slice(0, 60)}`, () => {
            const v = checkSpace(space as Space, s.value);
            if (s.valid) expect(v).toBeNull();
            else {
              expect(v).not.toBeNull();
              if (s.path !== undefined) expect(v?.path).toBe(s.path);
            }
          });
        }
      }
    });
  }
  describe('invalid space definitions', () => {
    for (const c of file.invalid_spaces) {
      it(c.name, () => {
        const v = validateSpaceDefinition(c.space);
        expect(v).not.toBeNull();
        if (c.path !== undefined) expect(v?.path).toBe(c.path);
      });
    }
  });
});
