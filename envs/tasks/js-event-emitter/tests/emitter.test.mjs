import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workspace } from 'sandgym-harness';

// The synchronous API: listeners are judge functions that workspace code calls synchronously, and some of them call
// the emitter again from inside an emit (re-entrant), which reads naturally without promises.
const emitter = workspace.sync.module('emitter.mjs');

test('on and emit with arguments', () => {
  const e = new emitter.Emitter();
  const got = [];
  e.on('x', (a, b) => got.push([a, b]));
  assert.equal(e.emit('x', 1, 2), 1);
  assert.deepEqual(got, [[1, 2]]);
  assert.equal(e.emit('nothing'), 0);
});

test('unsubscribe function removes one registration', () => {
  const e = new emitter.Emitter();
  let n = 0;
  const fn = () => n++;
  const off1 = e.on('x', fn);
  e.on('x', fn);
  off1();
  off1();
  e.emit('x');
  assert.equal(n, 1);
  assert.equal(e.listenerCount('x'), 1);
});

test('once', () => {
  const e = new emitter.Emitter();
  let n = 0;
  e.once('x', () => {
    n++;
    e.emit('x');
  });
  e.emit('x');
  e.emit('x');
  assert.equal(n, 1);
  assert.equal(e.listenerCount('x'), 0);
});

test('off removes earliest registration', () => {
  const e = new emitter.Emitter();
  const order = [];
  const a = () => order.push('a');
  e.on('x', a);
  e.on('x', () => order.push('b'));
  e.on('x', a);
  e.off('x', a);
  e.emit('x');
  assert.deepEqual(order, ['b', 'a']);
});

test('snapshot semantics during emit', () => {
  const e = new emitter.Emitter();
  const order = [];
  const late = () => order.push('late');
  let offB;
  e.on('x', () => {
    order.push('a');
    e.on('x', late);
    offB();
  });
  offB = e.on('x', () => order.push('b'));
  assert.equal(e.emit('x'), 1);
  assert.deepEqual(order, ['a']);
  e.emit('x');
  assert.deepEqual(order, ['a', 'a', 'late']);
});

test('errors do not stop other listeners', () => {
  const e = new emitter.Emitter();
  let ran = false;
  e.on('x', () => {
    throw new Error('first');
  });
  e.on('x', () => {
    throw new Error('second');
  });
  e.on('x', () => {
    ran = true;
  });
  // The workspace sees the listeners' errors without their messages; rethrown, the judge gets its own error back.
  assert.throws(() => e.emit('x'), /first/);
  assert.equal(ran, true);
});

test('events without listeners', () => {
  const e = new emitter.Emitter();
  assert.equal(e.listenerCount('none'), 0);
  const fn = () => {};
  e.off('none', fn); // nothing registered: harmless
  e.on('x', () => {});
  e.off('x', fn); // fn was never registered for x: nothing removed
  assert.equal(e.listenerCount('x'), 1);
  assert.equal(e.listenerCount('none'), 0);
  assert.equal(e.emit('x'), 1);
});

test('events are independent', () => {
  const e = new emitter.Emitter();
  const got = [];
  const fn = (v) => got.push(v);
  e.on('a', fn);
  e.on('b', fn);
  e.off('a', fn);
  assert.equal(e.listenerCount('a'), 0);
  assert.equal(e.listenerCount('b'), 1);
  assert.equal(e.emit('a', 1), 0);
  assert.equal(e.emit('b', 2), 1);
  assert.deepEqual(got, [2]);
});

test('emit counts every listener called, in registration order', () => {
  const e = new emitter.Emitter();
  const order = [];
  e.on('x', () => order.push(1));
  e.once('x', () => order.push(2));
  e.on('x', () => order.push(3));
  assert.equal(e.listenerCount('x'), 3);
  assert.equal(e.emit('x'), 3);
  assert.equal(e.emit('x'), 2);
  assert.deepEqual(order, [1, 2, 3, 1, 3]);
  assert.equal(e.listenerCount('x'), 2);
});

test('unsubscribing a once listener before it fires', () => {
  const e = new emitter.Emitter();
  let n = 0;
  const off = e.once('x', () => n++);
  off();
  assert.equal(e.emit('x'), 0);
  assert.equal(n, 0);
  off();
  assert.equal(e.listenerCount('x'), 0);
});

test('a throwing listener is still counted and others still run', () => {
  const e = new emitter.Emitter();
  const order = [];
  e.on('x', () => order.push('a'));
  e.on('x', () => {
    order.push('b');
    throw new TypeError('boom');
  });
  e.on('x', () => order.push('c'));
  assert.throws(() => e.emit('x'), TypeError);
  assert.deepEqual(order, ['a', 'b', 'c']);
  assert.equal(e.listenerCount('x'), 3);
});
