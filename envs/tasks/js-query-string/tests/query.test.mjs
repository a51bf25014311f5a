import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const ws = process.env.SANDGYM_WORKSPACE ?? process.cwd();
const load = (p) => import(pathToFileURL(path.join(ws, p)).href);
const { parseQuery, stringifyQuery } = await load('query.mjs');

const plain = (o) => JSON.parse(JSON.stringify(o));

test('basic pairs and leading ?', () => {
  assert.deepEqual(plain(parseQuery('?a=1&b=two')), { a: '1', b: 'two' });
});

test('plus, percent and utf-8', () => {
  assert.deepEqual(plain(parseQuery('q=hello+world&e=caf%C3%A9&p=100%')), { q: 'hello world', e: 'café', p: '100%' });
});

test('repeated keys become arrays', () => {
  assert.deepEqual(plain(parseQuery('t=a&x=1&t=b&t=c')), { t: ['a', 'b', 'c'], x: '1' });
});

test('bare keys and empty pairs', () => {
  assert.deepEqual(plain(parseQuery('flag&&a=&=v')), { flag: '', a: '', '': 'v' });
  assert.deepEqual(plain(parseQuery('')), {});
});

test('null prototype', () => {
  const r = parseQuery('__proto__=x&constructor=y');
  assert.equal(Object.getPrototypeOf(r), null);
  assert.equal(r['__proto__'], 'x');
  assert.equal(r.constructor, 'y');
});

test('stringify', () => {
  assert.equal(stringifyQuery({ q: 'a b&c', t: ['1', '2'], skip: undefined, flag: null, e: 'é' }), 'q=a+b%26c&t=1&t=2&flag&e=%C3%A9');
});

test('roundtrip', () => {
  const o = { a: 'x y', b: ['1', '2 3'], c: '%' };
  assert.deepEqual(plain(parseQuery(stringifyQuery(o))), o);
});
