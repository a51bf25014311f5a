import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workspace } from 'sandgym-harness';

const { parseQuery, stringifyQuery } = await workspace.module('query.mjs');

// Results cross by value (a null-prototype object stays null-prototype); compare them as plain data.
const plain = (o) => JSON.parse(JSON.stringify(o));

test('basic pairs and leading ?', async () => {
  assert.deepEqual(plain(await parseQuery('?a=1&b=two')), { a: '1', b: 'two' });
});

test('plus, percent and utf-8', async () => {
  assert.deepEqual(plain(await parseQuery('q=hello+world&e=caf%C3%A9&p=100%')), { q: 'hello world', e: 'café', p: '100%' });
});

test('repeated keys become arrays', async () => {
  assert.deepEqual(plain(await parseQuery('t=a&x=1&t=b&t=c')), { t: ['a', 'b', 'c'], x: '1' });
});

test('bare keys and empty pairs', async () => {
  assert.deepEqual(plain(await parseQuery('flag&&a=&=v')), { flag: '', a: '', '': 'v' });
  assert.deepEqual(plain(await parseQuery('')), {});
});

test('null prototype', async () => {
  const r = await parseQuery('__proto__=x&constructor=y');
  assert.equal(Object.getPrototypeOf(r), null);
  assert.equal(r['__proto__'], 'x');
  assert.equal(r.constructor, 'y');
});

test('stringify', async () => {
  assert.equal(await stringifyQuery({ q: 'a b&c', t: ['1', '2'], skip: undefined, flag: null, e: 'é' }), 'q=a+b%26c&t=1&t=2&flag&e=%C3%A9');
});

test('roundtrip', async () => {
  // Both directions against the same pair, parse first: the workspace never receives the object that parse must
  // return before parse has answered (passing it in first would let stringify stash it for parse).
  const o = { a: 'x y', b: ['1', '2 3'], c: '%' };
  const s = 'a=x+y&b=1&b=2+3&c=%25';
  assert.deepEqual(plain(await parseQuery(s)), o);
  assert.equal(await stringifyQuery(o), s);
});

test('well-formed escapes next to malformed ones', async () => {
  // Every hex digit class (0-9, A-F, a-f, both ends of each range) inside a value that also holds malformed escapes.
  const r = plain(await parseQuery('v=%30%39%2F%2f%C3%A9%c3%af%E2%82%AC%e2%82%ac+%zz%41+100%&w=50%+off%21'));
  assert.deepEqual(r, { v: '09//éï€€ %zzA 100%', w: '50% off!' });
  assert.deepEqual(plain(await parseQuery('%+=a%&b%3d=%')), { '% ': 'a%', 'b=': '%' });
});

test('escapes that are not valid UTF-8 stay literal', async () => {
  assert.deepEqual(plain(await parseQuery('a=%FF&b=%E2%82&c=x%C3')), { a: '%FF', b: '%E2%82', c: 'x%C3' });
});

test('repeated keys keep multi-character values whole', async () => {
  assert.deepEqual(plain(await parseQuery('tag=red&tag=green&tag=blue&k=v')), { tag: ['red', 'green', 'blue'], k: 'v' });
  assert.deepEqual(plain(await parseQuery('a=&a&a=x')), { a: ['', '', 'x'] });
});

test('stringify encodes keys and skips only undefined', async () => {
  assert.equal(await stringifyQuery({}), '');
  assert.equal(await stringifyQuery({ 'a b': 'c d', 'x&y': ['', 'z'], n: 0, f: false, e: '' }), 'a+b=c+d&x%26y=&x%26y=z&n=0&f=false&e=');
  assert.equal(await stringifyQuery({ only: null, u: undefined }), 'only');
});
