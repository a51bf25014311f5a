// Agent-facing results of a node-harness run (issue 12 item 4): per leaf test, its name (suite names joined with
// " > ", never a file path) and a message the task author controls: the first paragraph of their own assertion
// message (assert.equal(a, b, 'message')), a harness message (WorkspaceTimeout, WorkspaceCrashed...), or "failed".
// Never the generated assertion text (it quotes values), never a workspace error's message (the worker controls it
// and may echo test inputs), never test source. Runs in the orchestrating `node --test` process (the judge) and
// writes JSON ({"tests": [...]}, the same shape as the Python harness's agent.json) to its destination.
function messageOf(err) {
  const cause = err && typeof err === 'object' && 'cause' in err ? err.cause : err;
  if (!cause || typeof cause !== 'object') return 'failed';
  if (cause.sandgym_remote === true) return 'failed';
  if (cause.sandgym_harness === true && typeof cause.message === 'string') return cause.message.slice(0, 500);
  if (cause.code === 'ERR_ASSERTION' && cause.generatedMessage === false && typeof cause.message === 'string') {
    // Newer Node versions append the compared values after a blank line: keep the author's text only.
    const own = cause.message.split('\n\n')[0].trim();
    return own ? own.slice(0, 500) : 'failed';
  }
  return 'failed';
}

function outcomeOf(type, d) {
  if (d.skip !== undefined && d.skip !== false) return 'skipped';
  if (d.todo !== undefined && d.todo !== false) return 'skipped';
  return type === 'test:pass' ? 'passed' : 'failed';
}

export default async function* agentReporter(source) {
  const tests = [];
  const pending = new Map();
  for await (const ev of source) {
    if (ev.type !== 'test:pass' && ev.type !== 'test:fail') continue;
    const d = ev.data ?? {};
    const file = String(d.file ?? '');
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
    // A file that produced no tests is reported under its path: show its base name only.
    const name = /^\/.*\.[cm]?[jt]s$/.test(String(d.name)) ? `${String(d.name).split('/').pop()} (did not load)` : String(d.name);
    const outcome = outcomeOf(ev.type, d);
    const t = { path: [], name, outcome };
    if (outcome === 'skipped') t.message = 'skipped (counts as failed)';
    else if (outcome === 'failed') t.message = messageOf(d.details && d.details.error);
    tests.push(t);
    (levels[nesting] ??= []).push(t);
  }
  const out = tests.map((t) => ({
    test: [...t.path, t.name].join(' > ').slice(0, 200),
    outcome: t.outcome === 'passed' ? 'passed' : 'failed',
    ...(t.message ? { message: t.message } : {}),
  }));
  yield JSON.stringify({ tests: out });
}
