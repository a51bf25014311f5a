// `sandgym report ARCHIVE -o FILE`: the archive's HTML report (server/src/observability/archive/report.ts).
import { writeFile } from 'node:fs/promises';
import { loadArchive } from '../observability/archive/reader.js';
import { renderReport, summarise } from '../observability/archive/report.js';
import { nonEmptyValue, parseCommand, type CommandDef, type OptionDefs } from './args.js';
import { EXIT, UnavailableError } from './exit-codes.js';
import type { CliIo } from './io.js';

export const REPORT_HELP = `Usage: sandgym report <archive> [-o report.html]

Write a self-contained HTML report of an episode archive (no scripts, no external
resources: charts are inline SVG): outcomes, reward distribution, pass rate per task,
episode lengths, failure causes over time. <archive> is an archive file (.jsonl.gz), a
directory written by serve --archive DIR, or s3://bucket/prefix.

Options:
  -o, --out <file>       where to write the page (default: stdout)
  -h, --help             show this help

Exit codes: 0 written; 2 usage; 3 the archive cannot be read; 4 the output file cannot be written.`;

const REPORT_COMMAND = {
  name: 'report',
  help: REPORT_HELP,
  options: { out: { type: 'string', short: 'o' } },
  positionals: { name: '<archive>', min: 1, max: 1 },
} as const satisfies CommandDef<OptionDefs>;

export async function runReport(argv: string[], io: CliIo): Promise<number> {
  const parsed = parseCommand(REPORT_COMMAND, argv);
  if (parsed === null) {
    io.out(REPORT_HELP + '\n');
    return EXIT.OK;
  }
  const source = nonEmptyValue('archive', parsed.positionals[0] as string, REPORT_COMMAND.name);
  const out = parsed.values.out === undefined ? undefined : nonEmptyValue('out', parsed.values.out, REPORT_COMMAND.name);
  const records = await loadArchive(source);
  const html = renderReport(records, source);
  if (out === undefined) {
    io.out(html);
    return EXIT.OK;
  }
  try {
    await writeFile(out, html);
  } catch (e) {
    throw new UnavailableError(`cannot write ${out}: ${(e as Error).message}`, { cause: e });
  }
  const s = summarise(records);
  io.err(`wrote ${out}: ${s.episodes} episodes, ${s.passed}/${s.scored} passed\n`);
  return EXIT.OK;
}
