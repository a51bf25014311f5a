// JUnit XML reporter for `node --test` (custom reporters exist since Node 18.19; the built-in
// `junit` one only since 20.13). Copied into the grading directory by grader-plan.ts and loaded with
// --test-reporter=<path>. It runs in the orchestrating node process, not in the per-file child
// processes where the code under test runs. One <testcase> per leaf test: describe suites and
// parent tests (reported after their children) are not cases. A test file that produced no tests
// (e.g. process.exit(0) at import) is reported by Node as a test named after the file; it stays a
// case and report.ts counts it as an error, never a pass.
const ENT = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
// eslint-disable-next-line no-control-regex
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ENT[c]).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '');

function outcomeOf(type, d) {
  if (d.skip !== undefined && d.skip !== false) return 'skipped';
  if (d.todo !== undefined && d.todo !== false && type === 'test:fail') return 'skipped';
  return type === 'test:pass' ? 'passed' : 'failed';
}

export default async function* junit(source) {
  const cases = [];
  /** Per file: per nesting level, the cases reported since their parent (children come first). */
  const pending = new Map();
  for await (const ev of source) {
    if (ev.type !== 'test:pass' && ev.type !== 'test:fail') continue;
    const d = ev.data ?? {};
    const file = String(d.file ?? '').replace(/^file:\/\//, '');
    const nesting = Number(d.nesting ?? 0);
    let levels = pending.get(file);
    if (!levels) pending.set(file, (levels = []));
    const children = levels[nesting + 1] ?? [];
    levels[nesting + 1] = [];
    for (const c of children) c.path.unshift(String(d.name));
    if (children.length > 0 || (d.details && d.details.type === 'suite')) {
      (levels[nesting] ??= []).push(...children);
      continue;
    }
    const err = d.details && d.details.error;
    const c = {
      file,
      path: [],
      name: String(d.name),
      outcome: outcomeOf(ev.type, d),
      message: err ? String(err.message ?? err).slice(0, 2000) : '',
      time: Number(d.details?.duration_ms ?? 0) / 1000,
    };
    cases.push(c);
    (levels[nesting] ??= []).push(c);
  }
  const failures = cases.filter((c) => c.outcome === 'failed').length;
  const skipped = cases.filter((c) => c.outcome === 'skipped').length;
  yield '<?xml version="1.0" encoding="utf-8"?>\n';
  yield `<testsuites><testsuite name="node --test" tests="${cases.length}" failures="${failures}" skipped="${skipped}" errors="0">\n`;
  for (const c of cases) {
    const classname = [c.file, ...c.path].join(' > ');
    const body = c.outcome === 'failed' ? `<failure message="${esc(c.message)}"/>` : c.outcome === 'skipped' ? '<skipped/>' : '';
    yield `<testcase name="${esc(c.name)}" classname="${esc(classname)}" time="${c.time.toFixed(6)}">${body}</testcase>\n`;
  }
  yield '</testsuite></testsuites>\n';
}
