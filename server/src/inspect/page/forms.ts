// Action editors generated from the env spec: one form per tool from its JSON Schema parameters
// (string, number, integer, boolean, enum; anything else as a JSON field), a text box for text
// spaces, a number (plus quick buttons) for discrete spaces and a JSON editor for every other space.
// Each editor's read() returns the wire action or a message saying which field is wrong.
import type { Space, Tool } from '#protocol/index.js';
import { paramsOf, type JsonSchema } from '../../play/types.js';
import { h } from './dom.js';

export type Read<T> = { ok: true; value: T } | { ok: false; error: string };

export interface Editor {
  el: HTMLElement;
  read(): Read<unknown>;
  /** Focus the first input. */
  focus(): void;
  /** Called after a successful step (the text editor clears itself, like a chat box). */
  afterStep?(): void;
}

interface Field {
  el: HTMLElement;
  input: HTMLElement;
  /** present=false: leave the key out (an optional field left empty). */
  read(): Read<{ present: boolean; value?: unknown }>;
}

function schemaTypes(schema: JsonSchema): string[] {
  if (Array.isArray(schema.type)) return schema.type.filter((t): t is string => typeof t === 'string');
  return typeof schema.type === 'string' ? [schema.type] : [];
}

/** Long-text parameters get a textarea: file contents, code, commands. */
const MULTILINE = /content|code|source|script|body|text|patch|diff|command|stdin|program/i;

function labelFor(name: string, schema: JsonSchema, required: boolean, typeText: string, input: HTMLElement): HTMLElement {
  return h(
    'label',
    { class: 'param' },
    h(
      'span',
      { class: 'param-name' },
      name,
      required ? h('span', { class: 'req', title: 'required' }, '*') : null,
      h('span', { class: 'param-type' }, typeText),
    ),
    input,
    typeof schema.description === 'string' ? h('span', { class: 'param-desc' }, schema.description) : null,
  );
}

export function schemaField(name: string, schema: JsonSchema, required: boolean): Field {
  const types = schemaTypes(schema);
  const attrs = { 'data-param': name, name: `arg-${name}` };
  const def = schema.default;

  if (Array.isArray(schema.enum)) {
    const values = schema.enum;
    const select = h(
      'select',
      attrs,
      required ? null : h('option', { value: '' }, '(unset)'),
      ...values.map((v, i) => h('option', { value: String(i) }, typeof v === 'string' ? v : JSON.stringify(v))),
    );
    if (def !== undefined && values.includes(def)) select.value = String(values.indexOf(def));
    return {
      el: labelFor(name, schema, required, 'enum', select),
      input: select,
      read: () => (select.value === '' ? { ok: true, value: { present: false } } : { ok: true, value: { present: true, value: values[Number(select.value)] } }),
    };
  }

  if (types.length === 1 && types[0] === 'boolean') {
    if (required) {
      const box = h('input', { ...attrs, type: 'checkbox', checked: def === true });
      return { el: labelFor(name, schema, required, 'boolean', box), input: box, read: () => ({ ok: true, value: { present: true, value: box.checked } }) };
    }
    const select = h('select', attrs, h('option', { value: '' }, '(unset)'), h('option', { value: 'true' }, 'true'), h('option', { value: 'false' }, 'false'));
    if (typeof def === 'boolean') select.value = String(def);
    return {
      el: labelFor(name, schema, required, 'boolean', select),
      input: select,
      read: () => (select.value === '' ? { ok: true, value: { present: false } } : { ok: true, value: { present: true, value: select.value === 'true' } }),
    };
  }

  if (types.length === 1 && (types[0] === 'number' || types[0] === 'integer')) {
    const integer = types[0] === 'integer';
    const input = h('input', {
      ...attrs,
      type: 'text',
      inputmode: integer ? 'numeric' : 'decimal',
      placeholder: integer ? 'integer' : 'number',
      value: typeof def === 'number' ? String(def) : undefined,
    });
    return {
      el: labelFor(name, schema, required, types[0], input),
      input,
      read: () => {
        const t = input.value.trim();
        if (t === '') return required ? { ok: false, error: `${name} is required` } : { ok: true, value: { present: false } };
        const n = Number(t);
        if (!Number.isFinite(n)) return { ok: false, error: `${name} must be a number, got '${t}'` };
        if (integer && !Number.isInteger(n)) return { ok: false, error: `${name} must be an integer, got '${t}'` };
        return { ok: true, value: { present: true, value: n } };
      },
    };
  }

  if (types.length === 1 && types[0] === 'string') {
    const multiline = MULTILINE.test(name) || (typeof schema.maxLength === 'number' && schema.maxLength > 200 && name !== 'path');
    const input = multiline
      ? h('textarea', { ...attrs, rows: 3, spellcheck: 'false' }, typeof def === 'string' ? def : '')
      : h('input', { ...attrs, type: 'text', spellcheck: 'false', value: typeof def === 'string' ? def : undefined });
    return {
      el: labelFor(name, schema, required, 'string', input),
      input,
      read: () => {
        const v = (input as HTMLInputElement | HTMLTextAreaElement).value;
        return v === '' && !required ? { ok: true, value: { present: false } } : { ok: true, value: { present: true, value: v } };
      },
    };
  }

  // object, array, unions, untyped: edit as JSON.
  const area = h('textarea', { ...attrs, rows: 2, spellcheck: 'false', class: 'json', placeholder: 'JSON' }, def !== undefined ? JSON.stringify(def) : '');
  return {
    el: labelFor(name, schema, required, types.join(' | ') || 'json', area),
    input: area,
    read: () => {
      const t = area.value.trim();
      if (t === '') return required ? { ok: false, error: `${name} is required (JSON)` } : { ok: true, value: { present: false } };
      try {
        return { ok: true, value: { present: true, value: JSON.parse(t) } };
      } catch (err) {
        return { ok: false, error: `${name}: not valid JSON (${(err as Error).message})` };
      }
    },
  };
}

export function toolForm(tool: Tool): Editor {
  const props = paramsOf(tool).properties ?? {};
  const required = paramsOf(tool).required ?? [];
  const fields = Object.entries(props).map(([name, schema]) => ({ name, field: schemaField(name, schema, required.includes(name)) }));
  const el = h(
    'div',
    { class: 'tool-form', 'data-tool-form': tool.name },
    tool.description ? h('p', { class: 'tool-desc' }, tool.description) : null,
    ...fields.map((f) => f.field.el),
    fields.length === 0 ? h('p', { class: 'muted' }, 'no parameters') : null,
  );
  return {
    el,
    focus: () => fields[0]?.field.input.focus(),
    read: () => {
      const args: Record<string, unknown> = {};
      for (const { name, field } of fields) {
        const r = field.read();
        if (!r.ok) return r;
        if (r.value.present) args[name] = r.value.value;
      }
      return { ok: true, value: { name: tool.name, arguments: args } };
    },
  };
}

export function jsonEditor(initial: unknown, label: string): Editor {
  const area = h('textarea', { class: 'json', rows: 6, spellcheck: 'false', 'data-param': 'json', 'aria-label': label }, JSON.stringify(initial, null, 2));
  return {
    el: h('div', { class: 'json-editor' }, h('span', { class: 'param-name' }, label), area),
    focus: () => area.focus(),
    read: () => {
      try {
        return { ok: true, value: JSON.parse(area.value) };
      } catch (err) {
        return { ok: false, error: `not valid JSON: ${(err as Error).message}` };
      }
    },
  };
}

/** A tool picker (one tab per tool plus raw JSON) over one form per tool. */
export function toolCallEditor(tools: Tool[], onSubmit: () => void): Editor & { select(name: string): void } {
  const forms = new Map(tools.map((t) => [t.name, toolForm(t)]));
  const raw = jsonEditor({ name: tools[0]?.name ?? 'tool', arguments: {} }, 'raw tool call (JSON)');
  let current = tools[0]?.name ?? '__raw__';
  const tabs = h('div', { class: 'tool-tabs', role: 'tablist' });
  const body = h('div', { class: 'tool-body' });
  const select = (name: string) => {
    current = forms.has(name) ? name : '__raw__';
    for (const b of Array.from(tabs.children)) b.setAttribute('aria-selected', String(b.getAttribute('data-tool') === current));
    body.replaceChildren((forms.get(current) ?? raw).el);
  };
  for (const t of tools) tabs.append(h('button', { type: 'button', role: 'tab', class: 'tab', 'data-tool': t.name, onclick: () => select(t.name) }, t.name));
  tabs.append(h('button', { type: 'button', role: 'tab', class: 'tab raw', 'data-tool': '__raw__', onclick: () => select('__raw__') }, '{ } JSON'));
  select(current);
  const el = h('div', { class: 'tool-call-editor' }, tabs, body);
  // Ctrl/Cmd+Enter submits from anywhere in the editor, including textareas.
  el.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      onSubmit();
    }
  });
  return {
    el,
    select,
    focus: () => (forms.get(current) ?? raw).focus(),
    read: () => (forms.get(current) ?? raw).read(),
  };
}

export function textEditor(space: Space, onSubmit: () => void): Editor {
  const max = typeof space.max_length === 'number' ? space.max_length : undefined;
  const area = h('textarea', {
    'data-param': 'text',
    rows: 2,
    spellcheck: 'false',
    maxlength: max,
    placeholder: 'action text (Enter sends, Shift+Enter for a new line)',
  });
  area.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey) {
      ev.preventDefault();
      onSubmit();
    }
  });
  return {
    el: h(
      'label',
      { class: 'param' },
      h('span', { class: 'param-name' }, 'text', h('span', { class: 'param-type' }, max !== undefined ? `max ${max} chars` : 'text')),
      area,
    ),
    focus: () => area.focus(),
    read: () => ({ ok: true, value: area.value }),
    afterStep: () => {
      area.value = '';
      area.focus();
    },
  };
}

export function discreteEditor(space: Space, onSubmit: () => void): Editor {
  const start = typeof space.start === 'number' ? space.start : 0;
  const n = typeof space.n === 'number' ? space.n : 1;
  const input = h('input', { 'data-param': 'value', type: 'number', min: start, max: start + n - 1, step: 1, value: start });
  const quick =
    n <= 12
      ? h(
          'div',
          { class: 'quick' },
          ...Array.from({ length: n }, (_, i) =>
            h(
              'button',
              { type: 'button', class: 'small-button', 'data-discrete': start + i, onclick: () => ((input.value = String(start + i)), onSubmit()) },
              String(start + i),
            ),
          ),
        )
      : null;
  return {
    el: h(
      'div',
      {},
      h('label', { class: 'param' }, h('span', { class: 'param-name' }, 'value', h('span', { class: 'param-type' }, `${start}..${start + n - 1}`)), input),
      quick,
    ),
    focus: () => input.focus(),
    read: () => {
      const v = Number(input.value);
      return Number.isInteger(v) ? { ok: true, value: v } : { ok: false, error: `value must be an integer in ${start}..${start + n - 1}` };
    },
  };
}

/** A valid-looking starting value for a JSON editor (the server validates what is sent). */
export function templateFor(space: Space): unknown {
  const bound = (b: unknown, fallback: number) => (typeof b === 'number' ? b : fallback);
  switch (space.type) {
    case 'discrete':
      return typeof space.start === 'number' ? space.start : 0;
    case 'text':
      return '';
    case 'box': {
      const shape = Array.isArray(space.shape) ? (space.shape as number[]) : [];
      const v = Math.max(bound(space.low, 0), Math.min(bound(space.high, 0), 0));
      const fill = (dims: number[]): unknown => (dims.length === 0 ? v : Array.from({ length: dims[0] ?? 0 }, () => fill(dims.slice(1))));
      return fill(shape);
    }
    case 'multi_discrete':
      return Array.isArray(space.nvec) ? (space.nvec as unknown[]).map((_, i) => (Array.isArray(space.start) ? ((space.start as number[])[i] ?? 0) : 0)) : [];
    case 'multi_binary': {
      const n = space.n;
      const fill = (dims: number[]): unknown => (dims.length === 0 ? 0 : Array.from({ length: dims[0] ?? 0 }, () => fill(dims.slice(1))));
      return fill(typeof n === 'number' ? [n] : Array.isArray(n) ? (n as number[]) : []);
    }
    case 'dict':
      return Object.fromEntries(((space.spaces as { key: string; space: Space }[]) ?? []).map((e) => [e.key, templateFor(e.space)]));
    case 'tuple':
      return ((space.spaces as Space[]) ?? []).map(templateFor);
    case 'sequence':
      return [];
    case 'one_of':
      return [0, templateFor(((space.spaces as Space[]) ?? [])[0] ?? { type: 'json', schema: {} })];
    case 'tool_call':
      return { name: '', arguments: {} };
    default:
      return null;
  }
}
