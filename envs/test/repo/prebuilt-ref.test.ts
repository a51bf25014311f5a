// A prebuilt image named by a repository recipe (docs/TASKS.md, "A prebuilt image"): pinned by digest or refused at
// load, naming the field; the task's image is a local name derived from the reference (nothing pulled on a step).
import { describe, expect, it } from 'vitest';
import { environmentImage, parsePrebuiltRef, validateRecipe } from '../../src/repo/repo-environment.js';

const D = `sha256:${'ab'.repeat(32)}`;
const fail = (where: string, msg: string): never => {
  throw new Error(`${where} ${msg}`);
};

describe('prebuilt image references', () => {
  it('parses host, path and digest; Docker Hub names have no host', () => {
    expect(parsePrebuiltRef(`localhost:5000/sandgym-test/good@${D}`)).toEqual({ host: 'localhost:5000', path: 'sandgym-test/good', digest: D });
    expect(parsePrebuiltRef(`swebench/sweb.eval.x86_64.django__django-11099@${D}`)).toEqual({
      host: null,
      path: 'swebench/sweb.eval.x86_64.django__django-11099',
      digest: D,
    });
    expect(parsePrebuiltRef(`ghcr.io/org/img@${D}`)).toMatchObject({ host: 'ghcr.io', path: 'org/img' });
  });

  it.each([
    ['localhost:5000/x:latest', /must be pinned by digest/],
    ['x/y', /must be pinned by digest/],
    [`x/y:v1@${D}`, /names a tag besides the digest/],
    ['x/y@sha256:abc', /must be "sha256:<64 lowercase hex>"/],
    [`x/y@sha512:${'a'.repeat(128)}`, /must be "sha256/],
    [`X/Y@${D}`, /invalid repository path/],
    [`x/ y@${D}`, /without spaces/],
    [`bad_host:99/x@${D}`, /invalid registry host/],
  ])('refuses %s', (ref, why) => {
    const r = parsePrebuiltRef(ref);
    expect(typeof r).toBe('string');
    expect(r).toMatch(why);
  });

  it('a recipe with an image: pinned, no requirements, a derived local image per reference', () => {
    const r = validateRecipe({ image: `localhost:5000/a/b@${D}`, python_path: ['.'] }, fail);
    expect(r.image).toBe(`localhost:5000/a/b@${D}`);
    expect(environmentImage(r)).toMatch(/^sandgym\/repo-env:[0-9a-f]{16}$/);
    const other = validateRecipe({ image: `localhost:5000/a/b@sha256:${'cd'.repeat(32)}` }, fail);
    expect(environmentImage(other)).not.toBe(environmentImage(r));
    expect(() => validateRecipe({ image: 'localhost:5000/a/b:latest' }, fail)).toThrow(/^\/image must be pinned by digest/);
    expect(() => validateRecipe({ image: 42 }, fail)).toThrow(/^\/image must be a string/);
    expect(() => validateRecipe({ image: `a/b@${D}`, requirements: [`six==1.16.0 --hash=sha256:${'0'.repeat(64)}`] }, fail)).toThrow(
      /^\/requirements must be absent or empty with "image"/,
    );
    expect(() => validateRecipe({ image: `a/b@${D}`, base_image: 'python:3.11' }, fail)).toThrow(/^\/base_image must be one of/);
  });
});
