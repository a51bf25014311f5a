// An indexed binary min-heap: each element remembers its slot (through `pos`/`setPos`), so the
// scheduler can remove an expired request or re-key a client lane in O(log n) without searching.
// Kept generic over the element so the same code serves the lane heap (ordered by a lane's head
// request) and the deadline heap (ordered by deadline).

export class IndexedHeap<T> {
  private readonly a: T[] = [];

  constructor(
    private readonly less: (x: T, y: T) => boolean,
    private readonly pos: (x: T) => number,
    private readonly setPos: (x: T, i: number) => void,
  ) {}

  get size(): number {
    return this.a.length;
  }

  peek(): T | undefined {
    return this.a[0];
  }

  has(x: T): boolean {
    const i = this.pos(x);
    return i >= 0 && i < this.a.length && this.a[i] === x;
  }

  push(x: T): void {
    this.a.push(x);
    this.setPos(x, this.a.length - 1);
    this.up(this.a.length - 1);
  }

  pop(): T | undefined {
    const top = this.a[0];
    if (top !== undefined) this.removeAt(0);
    return top;
  }

  remove(x: T): boolean {
    if (!this.has(x)) return false;
    this.removeAt(this.pos(x));
    return true;
  }

  /** Restores the order after x's key changed (either direction). */
  update(x: T): void {
    if (!this.has(x)) return;
    const i = this.pos(x);
    this.up(i);
    this.down(this.pos(x));
  }

  /** Elements in heap order (not sorted): for scans that need every element. */
  items(): readonly T[] {
    return this.a;
  }

  private removeAt(i: number): void {
    const last = this.a.pop() as T;
    const gone = this.a[i] ?? last;
    this.setPos(gone, -1);
    if (i === this.a.length) return;
    this.a[i] = last;
    this.setPos(last, i);
    this.up(i);
    this.down(this.pos(last));
  }

  private up(i: number): void {
    const a = this.a;
    const x = a[i] as T;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = a[p] as T;
      if (!this.less(x, parent)) break;
      a[i] = parent;
      this.setPos(parent, i);
      i = p;
    }
    a[i] = x;
    this.setPos(x, i);
  }

  private down(i: number): void {
    const a = this.a;
    const n = a.length;
    const x = a[i] as T;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && this.less(a[r] as T, a[l] as T) ? r : l;
      const child = a[c] as T;
      if (!this.less(child, x)) break;
      a[i] = child;
      this.setPos(child, i);
      i = c;
    }
    a[i] = x;
    this.setPos(x, i);
  }
}
