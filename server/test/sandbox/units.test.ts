// Pure units of the sandbox layer: limit resolution and the shell text the host builds.
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildCommandScript, escapeForPrintf, shellQuote, simpleCommandArgv } from '../../src/sandbox/channel/shell.js';
import { SandboxLimitError, SandboxRequestError } from '../../src/sandbox/errors.js';
import { DEFAULT_LIMITS, resolveLimits } from '../../src/sandbox/limits.js';

const MAX = { memory_mb: 1024, cpus: 2, pids: 512, disk_mb: 1024, nofile: 4096, timeout_s: 600 };

describe('resolveLimits', () => {
  it('merges over defaults', () => {
    expect(resolveLimits({ memory_mb: 256 }, DEFAULT_LIMITS, MAX)).toEqual({ ...DEFAULT_LIMITS, memory_mb: 256 });
  });
  it('refuses over-max and non-positive values with the limit named', () => {
    expect(() => resolveLimits({ memory_mb: 4096 }, DEFAULT_LIMITS, MAX)).toThrow(SandboxLimitError);
    expect(() => resolveLimits({ memory_mb: 4096 }, DEFAULT_LIMITS, MAX)).toThrow(/memory_mb=4096 exceeds the server maximum 1024/);
    expect(() => resolveLimits({ pids: 0 }, DEFAULT_LIMITS, MAX)).toThrow(/pids must be a positive number/);
    expect(() => resolveLimits({ cpus: Number.NaN }, DEFAULT_LIMITS, MAX)).toThrow(SandboxLimitError);
  });
  it('clamps when asked', () => {
    expect(resolveLimits({ cpus: 8 }, DEFAULT_LIMITS, MAX, 'clamp').cpus).toBe(2);
  });
});

describe('simpleCommandArgv: one plain command runs without a shell', () => {
  it('splits a command of plain words on blanks, as the shell would', () => {
    expect(simpleCommandArgv('/bin/true')).toEqual(['/bin/true']);
    expect(simpleCommandArgv('ls -la /workspace')).toEqual(['ls', '-la', '/workspace']);
    expect(simpleCommandArgv('  python3 -m pytest -x tests/test_a.py  ')).toEqual(['python3', '-m', 'pytest', '-x', 'tests/test_a.py']);
    expect(simpleCommandArgv('grep\t-c\tx file.txt'.replace(/\\t/g, '\t'))).toEqual(['grep', '-c', 'x', 'file.txt']);
    // '=' and '%' are plain after the first word (an argument, not an assignment or a job).
    expect(simpleCommandArgv('dd if=/dev/zero of=out bs=1k count=1')).toEqual(['dd', 'if=/dev/zero', 'of=out', 'bs=1k', 'count=1']);
    expect(simpleCommandArgv('date +%s')).toEqual(['date', '+%s']);
  });
  it('leaves to the shell anything it would parse, expand or look up itself', () => {
    const shell = [
      '',
      '   ',
      'echo hi',
      'cd /tmp',
      'true',
      'exit 3',
      'export A=1',
      'A=1 env',
      'exec ls',
      'command ls',
      '. ./x',
      ': x',
      'test -f x',
      '[ -f x ]',
      'kill %1',
      'time ls',
      'if',
      'ls; ls',
      'ls && ls',
      'ls | wc',
      'ls > out',
      'ls 2>err',
      'ls <in',
      'ls &',
      "ls 'a b'",
      'ls "a"',
      'ls a\\ b',
      'ls $HOME',
      'ls ${HOME}',
      'ls `id`',
      'ls $(id)',
      'ls *.py',
      'ls a?',
      'ls [ab]',
      'ls ~',
      'ls ~/x',
      'ls #c',
      'ls {a,b}',
      'ls !x',
      'ls\nls',
      'ls\r',
      '-x',
      'ls ^x',
      `x${'y'.repeat(5000)}`,
    ];
    for (const c of shell) expect(simpleCommandArgv(c.replace(/\\n/g, '\n').replace(/\\r/g, '\r')), JSON.stringify(c)).toBeNull();
  });
  it('every argv it returns is what dash itself passes to the program (property, real dash)', () => {
    const word = fc.stringMatching(/^[A-Za-z0-9_./,:@%+=-]{1,12}$/);
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 6 }), fc.constantFrom(' ', '  ', '\t'), (words, sep) => {
        const script = words.join(sep);
        const argv = simpleCommandArgv(script);
        if (argv === null) return;
        // Replace the program by printf so dash prints the argv it built for the rest of the words.
        const viaDash = execFileSync('sh', ['-c', `printf '[%s]' ${argv.slice(1).join(' ')}`.trimEnd(), 'x']).toString();
        expect(viaDash).toBe(
          argv
            .slice(1)
            .map((a) => `[${a}]`)
            .join('') || '[]',
        );
        expect(argv).toEqual(words);
      }),
      { numRuns: 300 },
    );
  });
});

describe('shell text', () => {
  it('escapeForPrintf reproduces any bytes through the real printf of dash', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 200 }).filter((b) => !b.includes(0)),
        (bytes) => {
          const out = execFileSync('sh', ['-c', `printf '${escapeForPrintf(Buffer.from(bytes))}'`]);
          expect([...out]).toEqual([...bytes]);
        },
      ),
      { numRuns: 200 },
    );
  });
  it('shellQuote survives quotes, spaces and $', () => {
    for (const s of ["it's", 'a b', '$HOME', '`id`', '"', '\\', '\n']) {
      expect(execFileSync('sh', ['-c', `printf %s ${shellQuote(s)}`]).toString()).toBe(s);
    }
  });
  it('refuses env names that are not identifiers and NUL bytes', () => {
    expect(() => buildCommandScript({ argv: ['true'], cwd: '/', env: { 'A;rm': 'x' } })).toThrow(SandboxRequestError);
    expect(() => buildCommandScript({ argv: ['a\0b'], cwd: '/' })).toThrow(SandboxRequestError);
    expect(() => buildCommandScript({ cwd: '/' })).toThrow(/argv \(non-empty\) or script/);
  });
});

describe('sandbox config keys', async () => {
  const { validateConfigPartial, ConfigError } = await import('../../src/config.js');
  const { limitsFromConfig, driverOptionsFromConfig } = await import('../../src/env-host/sandbox-adapter.js');
  it('accepts the documented keys and names bad ones by path', () => {
    const ok = {
      sandbox: {
        limits_default: { memory_mb: 256, timeout_s: 10 },
        limits_max: { memory_mb: 2048, cpus: 2 },
        limit_policy: 'clamp',
        exec_path: 'docker-exec',
        user: '1000:1000',
        runtime: 'runsc',
        lease_ttl_ms: 30_000,
        create_concurrency: 2,
      },
    };
    expect(validateConfigPartial(ok)).toEqual(ok);
    expect(() => validateConfigPartial({ sandbox: { limits_max: { memroy_mb: 1 } } })).toThrow("unknown key 'sandbox/limits_max/memroy_mb'");
    expect(() => validateConfigPartial({ sandbox: { user: '0:0' } })).toThrow(/key 'sandbox' must match pattern .* \(at \/sandbox\/user\)/);
    expect(() => validateConfigPartial({ sandbox: { limit_policy: 'maybe' } })).toThrow(ConfigError);
    expect(() => validateConfigPartial({ sandbox: { lease_ttl_ms: 10 } })).toThrow(/lease_ttl_ms/);
    const pools = { pools: { min_idle: 0, max_total: 64, autosize: true, demand_window_ms: 5000, burst_memory_ms: 0 } };
    expect(validateConfigPartial(pools)).toEqual(pools);
    expect(() => validateConfigPartial({ pools: { burst_memory_ms: -1 } })).toThrow(/burst_memory_ms/);
    expect(() => validateConfigPartial({ pools: { burst_memory_ms: 1.5 } })).toThrow(/burst_memory_ms/);
    expect(() => validateConfigPartial({ pools: { burst_memroy_ms: 1 } })).toThrow("unknown key 'pools/burst_memroy_ms'");
  });
  it('merges limits over the built-ins, refuses defaults above maxima, and maps driver options', () => {
    const l = limitsFromConfig({ limits_default: { memory_mb: 256 }, limits_max: { memory_mb: 1024 } });
    expect(l.defaults).toEqual({ ...DEFAULT_LIMITS, memory_mb: 256 });
    expect(l.maxima.memory_mb).toBe(1024);
    expect(() => limitsFromConfig({ limits_max: { memory_mb: 256 } })).toThrow(
      'sandbox.limits_default.memory_mb (512, built-in) exceeds sandbox.limits_max.memory_mb (256)',
    );
    const o = driverOptionsFromConfig(
      { exec_path: 'docker-exec', user: '1000', runtime: 'runsc', lease_ttl_ms: 20_000, create_concurrency: 3, limit_policy: 'clamp' },
      l,
    );
    expect(o.docker).toMatchObject({
      execPath: 'docker-exec',
      user: '1000',
      runtime: 'runsc',
      leaseTtlMs: 20_000,
      createConcurrency: 3,
      limitPolicy: 'clamp',
      defaults: l.defaults,
      maxima: l.maxima,
    });
    expect(o.local).toMatchObject({ limitPolicy: 'clamp', defaults: l.defaults });
  });
});
