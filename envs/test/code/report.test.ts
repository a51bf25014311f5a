import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { parseJunitXml, scoreReport } from '../../src/code/report.js';
import { PYTHON } from './helpers.js';

// pytest 7.2 (Debian bookworm, the image's version) --junitxml output, trimmed.
const PYTEST_XML = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="4" time="0.050" timestamp="2026-11-29T10:00:00" hostname="x"><testcase classname="test_slug" name="test_basic" time="0.001" /><testcase classname="test_slug" name="test_accents" time="0.001"><failure message="AssertionError: assert 'a' == 'b'">def test_accents():
&gt;       assert slugify("x") == "b"
E       AssertionError</failure></testcase><testcase classname="test_slug" name="test_skip" time="0.000"><skipped type="pytest.skip" message="later">/t/test_slug.py:9: later</skipped></testcase><testcase classname="test_slug" name="test_empty_results[\u65e5\u672c]" time="0.001" /></testsuite></testsuites>`;

// Node 20 --test-reporter=junit output, trimmed (nested describe + file-level case).
const NODE_XML = `<?xml version="1.0" encoding="utf-8"?>
<testsuites>
	<testcase name="ok" time="0.001910" classname="test"/>
	<testcase name="bad" time="0.001965" classname="test" failure="Expected values to be strictly equal:1 !== 2">
		<failure type="testCodeFailure" message="Expected values to be strictly equal:1 !== 2">[Error] &lt;anonymous></failure>
	</testcase>
	<testcase name="sk" time="0.000196" classname="test">
		<skipped type="skipped" message="true"/>
	</testcase>
	<testsuite name="grp" time="0.000633" disabled="0" errors="0" tests="1" failures="0" skipped="0" hostname="vm">
		<testcase name="in" time="0.000237" classname="test"/>
	</testsuite>
	<testcase name="/tmp/njt/b.test.mjs" time="0.148964" classname="test"/>
	<!-- tests 5 -->
	<!-- pass 3 -->
</testsuites>`;

describe('parseJunitXml', () => {
  test('pytest report', () => {
    const r = parseJunitXml(PYTEST_XML, 'pytest-junit');
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.report).toMatchObject({ collected: 4, passed: 2, failed: 1, errors: 0, skipped: 1 });
    expect(r.report.cases.find((c) => c.name === 'test_accents')?.outcome).toBe('failed');
  });

  test('node report: nested suites counted, a file-level case is an error, comments ignored', () => {
    const r = parseJunitXml(NODE_XML, 'node-test-junit');
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.report).toMatchObject({ collected: 5, passed: 2, failed: 1, errors: 1, skipped: 1 });
  });

  test('attribute counts are never trusted, only the elements', () => {
    const xml =
      '<testsuites><testsuite tests="100" failures="0" errors="0"><testcase classname="a" name="x"><error message="boom"/></testcase></testsuite></testsuites>';
    const r = parseJunitXml(xml);
    expect(r.ok && r.report).toMatchObject({ collected: 1, passed: 0, errors: 1 });
  });

  test('a case reported twice keeps its worst outcome (pytest teardown error)', () => {
    const xml =
      '<testsuite><testcase classname="a" name="x"/><testcase classname="a" name="x"><error message="teardown"/></testcase><testcase classname="b" name="x"/></testsuite>';
    const r = parseJunitXml(xml);
    expect(r.ok && r.report).toMatchObject({ collected: 2, passed: 1, errors: 1 });
  });

  test.each([
    [null, 'report missing'],
    [undefined, 'report missing'],
    ['', 'report empty'],
    ['   \n', 'report empty'],
    ['<testsuites><testcase name="a">', 'report malformed'],
    ['not xml at all', 'report malformed'],
    ['<html><body/></html>', 'root element must be <testsuites> or <testsuite>'],
    ['<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuites/>', 'DOCTYPE not allowed'],
  ])('%j -> not ok (%s)', (xml, reason) => {
    const r = parseJunitXml(xml);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain(reason);
  });

  test('bytes input and size cap', () => {
    expect(parseJunitXml(new TextEncoder().encode(PYTEST_XML)).ok).toBe(true);
    const huge = '<testsuites>' + '<testcase classname="a" name="x"/>'.repeat(300_000) + '</testsuites>';
    const r = parseJunitXml(huge);
    expect(r.ok).toBe(false);
  });

  test('an empty suite parses with 0 collected (then fails the count check)', () => {
    const r = parseJunitXml('<testsuites></testsuites>');
    expect(r.ok && r.report.collected).toBe(0);
    expect(scoreReport(r, 3)).toMatchObject({ ok: false, fraction: 0, reason: 'collected 0 tests, the task declares 3' });
  });
});

describe('scoreReport', () => {
  test('fraction of expected tests passing', () => {
    const s = scoreReport(parseJunitXml(PYTEST_XML), 4);
    expect(s).toMatchObject({ ok: true, fraction: 0.5 });
  });
  test('count mismatch or missing report is 0 with a reason', () => {
    expect(scoreReport(parseJunitXml(PYTEST_XML), 5)).toMatchObject({ ok: false, fraction: 0, reason: 'collected 4 tests, the task declares 5' });
    expect(scoreReport(parseJunitXml(null), 5)).toMatchObject({ ok: false, fraction: 0, reason: 'report missing' });
  });
});

describe.skipIf(!PYTHON)('real runner output (skipped: host python3 without pytest)', () => {
  test('pytest --junitxml and node --test junit parse as expected', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sandgym-report-'));
    try {
      writeFileSync(
        path.join(dir, 'test_x.py'),
        'import pytest\ndef test_a():\n    pass\ndef test_b():\n    assert 0\n@pytest.mark.skip\ndef test_c():\n    pass\ndef test_d(): raise RuntimeError\n',
      );
      try {
        execFileSync(PYTHON as string, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', `--junitxml=${dir}/py.xml`, `${dir}/test_x.py`], {
          cwd: dir,
          stdio: 'ignore',
        });
      } catch {
        /* exit 1: failures; only the XML matters */
      }
      const py = parseJunitXml(readFileSync(path.join(dir, 'py.xml')), 'pytest-junit');
      expect(py.ok && py.report).toMatchObject({ collected: 4, passed: 1, failed: 2, skipped: 1 });
      writeFileSync(
        path.join(dir, 'x.test.mjs'),
        "import { test } from 'node:test';\nimport assert from 'node:assert';\ntest('a', () => {});\ntest('b', () => assert.equal(1, 2));\n",
      );
      try {
        execFileSync(process.execPath, ['--test', '--test-reporter=junit', `--test-reporter-destination=${dir}/node.xml`, `${dir}/x.test.mjs`], {
          cwd: dir,
          stdio: 'ignore',
        });
      } catch {
        /* exit 1 */
      }
      const nd = parseJunitXml(readFileSync(path.join(dir, 'node.xml')), 'node-test-junit');
      expect(nd.ok && nd.report).toMatchObject({ collected: 2, passed: 1, failed: 1 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('sandgym node --test JUnit reporter (node-junit-reporter.mjs)', () => {
  test('leaf tests only (suites and parent tests are not cases); file without tests is an error; skips are skipped', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sandgym-reporter-'));
    try {
      const reporter = fileURLToPath(new URL('../../src/code/node-junit-reporter.mjs', import.meta.url));
      writeFileSync(
        path.join(dir, 'a.test.mjs'),
        "import { test, describe } from 'node:test';\nimport assert from 'node:assert';\n" +
          "describe('s', () => { test('same', () => {}); test('b', () => assert.equal(1, 2)); });\n" +
          "test('same', () => {});\ntest('p', async (t) => { await t.test('c1', () => {}); await t.test('c2', () => {}); });\n" +
          "test('sk', { skip: true }, () => {});\nconsole.log('ok 9 - fake\\n1..9');\n",
      );
      writeFileSync(path.join(dir, 'b.test.mjs'), 'process.exit(0);\n');
      try {
        execFileSync(
          process.execPath,
          ['--test', `--test-reporter=${reporter}`, `--test-reporter-destination=${dir}/r.xml`, `${dir}/a.test.mjs`, `${dir}/b.test.mjs`],
          { cwd: dir, stdio: 'ignore' },
        );
      } catch {
        /* exit 1 */
      }
      const r = parseJunitXml(readFileSync(path.join(dir, 'r.xml')), 'node-test-junit');
      expect(r.ok && r.report).toMatchObject({ collected: 7, passed: 4, failed: 1, errors: 1, skipped: 1 });
      if (r.ok) expect(r.report.cases.map((c) => c.name).sort()).toEqual([`${dir}/b.test.mjs`, 'b', 'c1', 'c2', 'same', 'same', 'sk'].sort());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
