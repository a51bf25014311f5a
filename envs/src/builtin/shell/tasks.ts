// shell-v0 tasks: small file-manipulation jobs whose success is a property of the final
// filesystem, checked by a POSIX sh script run inside the sandbox (exit 0 = solved). Checks use only
// tools that busybox and GNU coreutils both have (the local driver runs the host's /usr).
import type { FileEntry } from '../../sandbox-api.js';

export interface ShellTask {
  id: string;
  prompt: string;
  /** Written into the workspace before the first step. */
  files: FileEntry[];
  /** Runs in the workspace; exit status 0 means solved. */
  check: string;
  /** A command that solves it (tests and benchmarks use it; never shown to the agent). */
  solution: string;
}

const NAMES = ['mallory', 'alice', 'trent', 'bob', 'alice', 'carol', 'bob', 'dave', 'erin', 'alice'];
const UNIQUE_SORTED = [...new Set(NAMES)].sort().join('\n') + '\n';

const CSV_ROWS = Array.from({ length: 37 }, (_, i) => `${i + 1},item-${(i * 7) % 23},${(i * 13) % 100}`);
const APP_LOG = [
  '2024-01-01 10:00:00 INFO starting',
  '2024-01-01 10:00:01 ERROR disk full on /var',
  '2024-01-01 10:00:02 WARN retrying',
  '2024-01-01 10:00:03 ERROR cannot open config',
  '2024-01-01 10:00:04 INFO ready',
  '2024-01-01 10:00:05 ERROR lost connection',
];
const INI = ['[server]', 'port=8080', 'debug=false', '', '[worker]', 'threads=4', 'debug=false', 'name=debug=false-ish'];
const INI_FIXED = INI.map((l) => (l === 'debug=false' ? 'debug=true' : l));

/**
 * `cmp` of a file against fixed content fed through a heredoc: no temporary file the agent could
 * have planted a symlink for (the marker never occurs in our fixed contents).
 */
const same = (file: string, text: string) => `cmp -s - ${file} <<'SANDGYM_EOF'\n${text}SANDGYM_EOF`;

export const SHELL_TASKS: readonly ShellTask[] = [
  {
    id: 'create-file',
    prompt: 'Create the file hello.txt in the working directory containing exactly the line "hello world" (with a trailing newline).',
    files: [],
    check: `printf 'hello world\\n' | cmp -s - hello.txt`,
    solution: `echo 'hello world' > hello.txt`,
  },
  {
    id: 'rename-logs',
    prompt:
      'The directory logs/ holds a.log, b.log and c.log. Rename every .log file in logs/ to the same name with a .txt extension (a.log -> a.txt), keeping their contents. No .log file may remain.',
    files: [
      { path: 'logs/a.log', content: 'alpha\n' },
      { path: 'logs/b.log', content: 'bravo\n' },
      { path: 'logs/c.log', content: 'charlie\n' },
    ],
    check: [
      `[ "$(cat logs/a.txt)" = alpha ] && [ "$(cat logs/b.txt)" = bravo ] && [ "$(cat logs/c.txt)" = charlie ] || exit 1`,
      `for f in logs/*.log; do [ -e "$f" ] && exit 1; done`,
      'exit 0',
    ].join('\n'),
    solution: `for f in logs/*.log; do mv "$f" "\${f%.log}.txt"; done`,
  },
  {
    id: 'count-rows',
    prompt: 'data.csv has a header line followed by data rows. Write the number of data rows (not counting the header) to count.txt, as a single number.',
    files: [{ path: 'data.csv', content: ['id,name,score', ...CSV_ROWS].join('\n') + '\n' }],
    check: `[ "$(tr -d ' \\t\\r\\n' < count.txt)" = "${CSV_ROWS.length}" ]`,
    solution: `tail -n +2 data.csv | wc -l > count.txt`,
  },
  {
    id: 'enable-debug',
    prompt: 'In config.ini, change every line that is exactly "debug=false" to "debug=true". Leave every other line unchanged.',
    files: [{ path: 'config.ini', content: INI.join('\n') + '\n' }],
    check: same('config.ini', INI_FIXED.join('\n') + '\n'),
    solution: `sed -i 's/^debug=false$/debug=true/' config.ini`,
  },
  {
    id: 'unique-names',
    prompt: 'names.txt lists names, one per line, with duplicates. Write the distinct names, sorted alphabetically, one per line, to unique.txt.',
    files: [{ path: 'names.txt', content: NAMES.join('\n') + '\n' }],
    check: same('unique.txt', UNIQUE_SORTED),
    solution: `sort -u names.txt > unique.txt`,
  },
  {
    id: 'extract-errors',
    prompt: 'Copy every line of app.log that contains the word ERROR into errors.txt, in their original order, and nothing else.',
    files: [{ path: 'app.log', content: APP_LOG.join('\n') + '\n' }],
    check: same('errors.txt', APP_LOG.filter((l) => l.includes('ERROR')).join('\n') + '\n'),
    solution: `grep ERROR app.log > errors.txt`,
  },
  {
    id: 'project-layout',
    prompt: 'Create the directories src, tests and docs, an empty file src/__init__.py, and a file docs/README.md whose first line is "# Project".',
    files: [],
    check: `[ -d src ] && [ -d tests ] && [ -d docs ] && [ -f src/__init__.py ] && [ ! -s src/__init__.py ] && [ "$(head -n 1 docs/README.md)" = '# Project' ]`,
    solution: `mkdir -p src tests docs && : > src/__init__.py && echo '# Project' > docs/README.md`,
  },
  {
    id: 'make-executable',
    prompt: 'Make the script run.sh executable and run it; it writes its result to out.txt.',
    files: [{ path: 'run.sh', content: '#!/bin/sh\necho "ran ok" > out.txt\n', mode: 0o644 }],
    check: `[ -x run.sh ] && [ "$(cat out.txt)" = 'ran ok' ]`,
    solution: `chmod +x run.sh && ./run.sh`,
  },
];

export function findTask(id: string): ShellTask | undefined {
  return SHELL_TASKS.find((t) => t.id === id);
}
