// The raw-frames pane: every protocol message as it went over the socket, in order, so a client
// author can see exactly what to send and what comes back. JSON frames are shown byte-for-byte;
// msgpack frames as their size, a hex preview and the decoded message.
import type { FrameRecord } from '#client/types.js';
import { h } from './dom.js';

export interface FrameView {
  direction: 'sent' | 'received';
  type: string;
  encoding: 'json' | 'msgpack';
  /** JSON text as sent/received; for msgpack the decoded message as JSON. */
  text: string;
  bytes: number;
}

const MAX_FRAMES = 1000;

function describe(message: unknown): string {
  if (!message || typeof message !== 'object') return '?';
  const m = message as { type?: unknown; event?: unknown; error?: { code?: unknown } };
  if (m.type === 'error') return `error ${String(m.error?.code ?? '')}`;
  if (m.type === 'event') return `event ${String(m.event ?? '')}`;
  return String(m.type ?? '?');
}

function hex(bytes: Uint8Array, max = 32): string {
  const parts = Array.from(bytes.subarray(0, max), (b) => b.toString(16).padStart(2, '0'));
  return parts.join(' ') + (bytes.length > max ? ' …' : '');
}

export class FramesPane {
  readonly frames: FrameView[] = [];
  private t0 = 0;
  /** Request id -> type, so replies can be labelled with what they answer. */
  private readonly requestTypes = new Map<number, string>();

  constructor(
    private readonly list: HTMLElement,
    private readonly counter: HTMLElement,
  ) {}

  clear(): void {
    this.frames.length = 0;
    this.list.replaceChildren();
    this.counter.textContent = '0';
  }

  add(frame: FrameRecord): void {
    if (this.t0 === 0) this.t0 = frame.at;
    const binary = typeof frame.data !== 'string';
    const text = typeof frame.data === 'string' ? frame.data : JSON.stringify(frame.message ?? null);
    const msg = frame.message as { id?: unknown; type?: unknown } | undefined;
    let type = describe(frame.message);
    if (frame.direction === 'sent' && typeof msg?.id === 'number') this.requestTypes.set(msg.id, type);
    if (frame.direction === 'received' && typeof msg?.id === 'number' && this.requestTypes.has(msg.id)) {
      type = `${type} ← ${this.requestTypes.get(msg.id)}`;
      this.requestTypes.delete(msg.id);
    }
    const view: FrameView = {
      direction: frame.direction,
      type,
      encoding: binary ? 'msgpack' : 'json',
      text,
      bytes: binary ? (frame.data as Uint8Array).length : new TextEncoder().encode(text).length,
    };
    this.frames.push(view);
    if (this.frames.length > MAX_FRAMES) {
      this.frames.shift();
      this.list.firstElementChild?.remove();
    }
    const arrow = frame.direction === 'sent' ? '→' : '←';
    const ms = frame.at - this.t0;
    const body = h('pre', { class: 'frame-body' }, binary ? `${text}` : text);
    const li = h(
      'li',
      { class: `frame ${frame.direction}${type.startsWith('error') ? ' is-error' : ''}`, 'data-direction': frame.direction, 'data-type': type },
      h(
        'div',
        { class: 'frame-head' },
        h('span', { class: 'arrow' }, arrow),
        h('span', { class: 'frame-type' }, type),
        h('span', { class: 'frame-meta' }, `${view.encoding} · ${view.bytes} B · +${ms.toFixed(0)} ms`),
      ),
      binary ? h('div', { class: 'frame-hex' }, hex(frame.data as Uint8Array)) : null,
      body,
    );
    // Long frames start folded; a click unfolds them.
    if (text.length > 400) {
      li.classList.add('folded');
      li.addEventListener('click', () => li.classList.toggle('folded'));
    }
    this.list.append(li);
    this.counter.textContent = String(this.frames.length);
    this.list.scrollTop = this.list.scrollHeight;
  }
}
