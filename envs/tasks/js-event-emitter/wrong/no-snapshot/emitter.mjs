// WRONG: emit iterates the live listener list, so listeners added during an emit run and removals shift the loop.
export class Emitter {
  #listeners = new Map();

  #list(event) {
    let l = this.#listeners.get(event);
    if (!l) {
      l = [];
      this.#listeners.set(event, l);
    }
    return l;
  }

  #add(event, fn, once) {
    const reg = { fn, once, removed: false };
    this.#list(event).push(reg);
    return () => this.#remove(event, reg);
  }

  #remove(event, reg) {
    const l = this.#listeners.get(event);
    if (!l || reg.removed) return;
    reg.removed = true;
    const i = l.indexOf(reg);
    if (i >= 0) l.splice(i, 1);
  }

  on(event, fn) {
    return this.#add(event, fn, false);
  }

  once(event, fn) {
    return this.#add(event, fn, true);
  }

  off(event, fn) {
    const reg = this.#listeners.get(event)?.find((r) => r.fn === fn);
    if (reg) this.#remove(event, reg);
  }

  emit(event, ...args) {
    const list = this.#listeners.get(event) ?? [];
    let called = 0;
    let firstError;
    let failed = false;
    for (let i = 0; i < list.length; i++) {
      const reg = list[i];
      if (reg.removed) continue;
      if (reg.once) this.#remove(event, reg);
      called++;
      try {
        reg.fn(...args);
      } catch (err) {
        if (!failed) {
          failed = true;
          firstError = err;
        }
      }
    }
    if (failed) throw firstError;
    return called;
  }

  listenerCount(event) {
    return this.#listeners.get(event)?.length ?? 0;
  }
}
