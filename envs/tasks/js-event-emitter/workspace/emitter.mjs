export class Emitter {
  on(event, fn) {
    throw new Error('not implemented');
  }
  once(event, fn) {
    throw new Error('not implemented');
  }
  off(event, fn) {
    throw new Error('not implemented');
  }
  emit(event, ...args) {
    throw new Error('not implemented');
  }
  listenerCount(event) {
    throw new Error('not implemented');
  }
}
