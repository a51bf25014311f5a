import { describe, expect, it } from 'vitest';
import { findHeredoc, parseAction, tokenize, toolUsage } from '../../src/play/shorthand.js';
import { validateEnvSpec, type EnvSpec, type Tool } from '../../../protocol/src/index.js';

const tools: [Tool, ...Tool[]] = [
  {
    name: 'bash',
    description: 'Run a command.',
    parameters: { type: 'object', properties: { command: { type: 'string' }, timeout_s: { type: 'number' } }, required: ['command'] },
  },
  {
    name: 'write_file',
    description: 'Write a file.',
    parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'] },
  },
  {
    name: 'read_file',
    description: 'Read lines of a file.',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, start_line: { type: 'integer' }, end_line: { type: 'integer' } },
      required: ['path'],
    },
  },
  { name: 'submit', description: 'Submit an answer.', parameters: { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] } },
  { name: 'done', description: 'End the episode.', parameters: { type: 'object', properties: {} } },
  {
    name: 'calculate',
    description: 'Evaluate an expression.',
    parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
  },
  {
    name: 'add',
    description: 'Add two numbers.',
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  },
  {
    name: 'mode',
    description: 'Set the mode.',
    parameters: { type: 'object', properties: { level: { enum: ['low', 'high'] }, verbose: { type: 'boolean' } }, required: ['level'] },
  },
];

/** A complete env spec around an action space, checked against the protocol's schema like one a server sends. */
function spec(action_space: EnvSpec['action_space'], extra: Partial<EnvSpec> = {}): EnvSpec {
  const s: EnvSpec = {
    id: 'x',
    description: 'An env for the shorthand tests.',
    observation_space: { type: 'text', max_length: 10 },
    action_space,
    max_episode_steps: null,
    reward_range: [0, 1],
    stochastic: false,
    ...extra,
  };
  const v = validateEnvSpec(s);
  if (!v.ok) throw new Error(`test spec is not a valid env spec: ${v.error.message} ${JSON.stringify(v.error.details)}`);
  return s;
}
const toolEnv = spec({ type: 'tool_call', tools });

function action(line: string, s: EnvSpec = toolEnv, body?: string): unknown {
  const r = parseAction(line, s, body);
  if (!r.ok) throw new Error(r.error);
  return r.action;
}

function error(line: string, s: EnvSpec = toolEnv, body?: string): string {
  const r = parseAction(line, s, body);
  if (r.ok) throw new Error(`expected an error, got ${JSON.stringify(r.action)}`);
  return r.error;
}

describe('tool_call shorthand', () => {
  it('gives the whole rest of the line to the single required string parameter', () => {
    expect(action('bash ls -la | grep "x y"')).toEqual({ name: 'bash', arguments: { command: 'ls -la | grep "x y"' } });
    expect(action('calculate (2+3) * 4')).toEqual({ name: 'calculate', arguments: { expression: '(2+3) * 4' } });
  });

  it('coerces the single parameter to its schema type', () => {
    expect(action('submit 42')).toEqual({ name: 'submit', arguments: { answer: 42 } });
    expect(action('submit -1.5e2')).toEqual({ name: 'submit', arguments: { answer: -150 } });
    expect(error('submit forty-two')).toMatch(/submit\.answer expects number/);
  });

  it('fills several parameters positionally (required first) with shell quoting', () => {
    expect(action('add 2 3')).toEqual({ name: 'add', arguments: { a: 2, b: 3 } });
    expect(action("write_file 'my file.py' 'print(1)'")).toEqual({ name: 'write_file', arguments: { path: 'my file.py', content: 'print(1)' } });
    expect(action('read_file src/a.py start_line=3 end_line=10')).toEqual({ name: 'read_file', arguments: { path: 'src/a.py', start_line: 3, end_line: 10 } });
    expect(action('bash timeout_s=5 sleep 9')).toEqual({ name: 'bash', arguments: { command: 'sleep 9', timeout_s: 5 } });
    expect(action('bash FOO=1 env')).toEqual({ name: 'bash', arguments: { command: 'FOO=1 env' } });
  });

  it('accepts key=value for named parameters', () => {
    expect(action('read_file path=a.py end_line=5')).toEqual({ name: 'read_file', arguments: { path: 'a.py', end_line: 5 } });
    expect(error('read_file a.py start_line=1.5')).toMatch(/must be an integer/);
  });

  it('puts a heredoc body in the last positional slot', () => {
    const body = 'def f():\n    return 1\n';
    expect(action('write_file f.py', toolEnv, body)).toEqual({ name: 'write_file', arguments: { path: 'f.py', content: body } });
    expect(action('bash', toolEnv, 'cd /tmp\nls')).toEqual({ name: 'bash', arguments: { command: 'cd /tmp\nls' } });
  });

  it('takes a JSON object as arguments, and raw JSON tool calls', () => {
    expect(action('add {"a": 1, "b": 2}')).toEqual({ name: 'add', arguments: { a: 1, b: 2 } });
    expect(action('{"name": "done", "arguments": {}}')).toEqual({ name: 'done', arguments: {} });
    expect(action('{"name": "done"}')).toEqual({ name: 'done', arguments: {} });
    expect(error('{"name": ')).toMatch(/not valid JSON/);
    expect(error('add {"a": 1,')).toMatch(/not valid JSON/);
  });

  it('handles tools without parameters, enums and booleans', () => {
    expect(action('done')).toEqual({ name: 'done', arguments: {} });
    expect(action('mode high verbose=true')).toEqual({ name: 'mode', arguments: { level: 'high', verbose: true } });
  });

  it('explains unknown tools, missing and surplus arguments', () => {
    expect(error('rm -rf /')).toMatch(/unknown tool 'rm'; tools: bash, write_file/);
    expect(error('submit')).toMatch(/missing 'answer' for submit; usage: submit <answer>/);
    expect(error('write_file only-path')).toMatch(/missing 'content'/);
    expect(error('add 1 2 3')).toMatch(/too many arguments for add; usage: add <a> <b>/);
    expect(error("write_file 'unterminated")).toMatch(/unterminated single quote/);
    expect(error('   ')).toMatch(/empty action/);
  });

  it('renders usage with optional parameters in brackets', () => {
    expect(toolUsage(tools[2] as Tool)).toBe('read_file <path> [start_line] [end_line]');
  });

  it('reads the tools from the action space, with or without the optional tools copy in the spec', () => {
    const bashOnly: [Tool] = [tools[0]];
    const withCopy = spec({ type: 'tool_call', tools: bashOnly }, { tools: bashOnly });
    expect(action('bash pwd', withCopy)).toEqual({ name: 'bash', arguments: { command: 'pwd' } });
    expect(error('add 1 2', withCopy)).toMatch(/unknown tool 'add'; tools: bash /);
  });
});

describe('other action spaces', () => {
  it('text takes the raw line, or the heredoc body', () => {
    const t = spec({ type: 'text', max_length: 100 });
    expect(action('  crane ', t)).toBe('  crane ');
    expect(action('{"not": "parsed"}', t)).toBe('{"not": "parsed"}');
    expect(action('', t, 'line 1\nline 2')).toBe('line 1\nline 2');
    expect(action('Answer:', t, '42')).toBe('Answer:\n42');
  });

  it('discrete takes a number', () => {
    const d = spec({ type: 'discrete', n: 2 });
    expect(action(' 1 ', d)).toBe(1);
    expect(error('one', d)).toMatch(/not valid JSON for a discrete action/);
  });

  it('everything else takes JSON', () => {
    const d = spec({ type: 'dict', spaces: [] });
    expect(action('{"move": [0.5, 0], "say": "hi"}', d)).toEqual({ move: [0.5, 0], say: 'hi' });
    expect(error('', d)).toMatch(/empty action/);
    expect(error('{move}', d)).toMatch(/not valid JSON for a dict action/);
  });
});

describe('heredoc and tokenizer', () => {
  it('finds a trailing <<MARKER in its quoted and dashed forms', () => {
    expect(findHeredoc('write_file a.py <<EOF')).toEqual({ head: 'write_file a.py', marker: 'EOF' });
    expect(findHeredoc("bash <<'END'")).toEqual({ head: 'bash', marker: 'END' });
    expect(findHeredoc('bash <<-"X1"')).toEqual({ head: 'bash', marker: 'X1' });
    expect(findHeredoc('<<EOF')).toEqual({ head: '', marker: 'EOF' });
    expect(findHeredoc('bash echo $((1 << 2))')).toBeNull();
    expect(findHeredoc('bash cat <<EOF > x')).toBeNull();
  });

  it('splits words like a shell', () => {
    expect(tokenize(`a 'b c' "d \\"e\\"" f\\ g`)).toEqual({ ok: true, action: ['a', 'b c', 'd "e"', 'f g'] });
    expect(tokenize('"open')).toEqual({ ok: false, error: 'unterminated double quote' });
  });
});
