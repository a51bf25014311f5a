// Parses the JUnit XML written by pytest (--junitxml) or Node (--test-reporter=junit) into counts.
// Only the XML is trusted: the exit code and the printed text are under the agent's influence
// (fake "passed" lines, sys.exit(0)), so they are never read here.
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { TestFormat } from './task-types.js';

export type CaseOutcome = 'passed' | 'failed' | 'error' | 'skipped';

export interface TestCaseResult {
  name: string;
  classname: string;
  outcome: CaseOutcome;
}

export interface TestReport {
  collected: number;
  passed: number;
  failed: number;
  errors: number;
  skipped: number;
  cases: TestCaseResult[];
}

export type ParseResult = { ok: true; report: TestReport } | { ok: false; reason: string };

export const MAX_REPORT_BYTES = 8 * 1024 * 1024;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '',
  allowBooleanAttributes: true,
  parseAttributeValue: false,
  parseTagValue: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  // A DOCTYPE with entities has no place in a test report; entity expansion is an attack surface.
  processEntities: true,
  htmlEntities: false,
  isArray: (name) => name === 'testsuite' || name === 'testcase' || name === 'failure' || name === 'error' || name === 'skipped',
});

type Node = Record<string, unknown>;

const RANK: Record<CaseOutcome, number> = { passed: 0, skipped: 1, failed: 2, error: 3 };

function asNodes(v: unknown): Node[] {
  return Array.isArray(v) ? (v.filter((x) => x !== null && typeof x === 'object') as Node[]) : [];
}

function has(node: Node, key: string): boolean {
  return Array.isArray(node[key]) && (node[key] as unknown[]).length > 0;
}

function outcomeOf(tc: Node, format: TestFormat | undefined): CaseOutcome {
  if (has(tc, 'error')) return 'error';
  if (has(tc, 'failure')) return 'failed';
  if (has(tc, 'skipped')) return 'skipped';
  // Node reports a test *file* as one test case when it produced no tests itself, e.g. when the code
  // under test called process.exit(0) at import time: that is never a pass.
  if ((format === 'node-test-junit' || format === 'node-harness') && /^\/.*\.(m|c)?[jt]s$/.test(String(tc.name ?? ''))) return 'error';
  return 'passed';
}

function collectCases(node: Node, out: Node[], depth: number): void {
  if (depth > 64) throw new Error('testsuite nesting too deep');
  for (const tc of asNodes(node.testcase)) out.push(tc);
  for (const ts of asNodes(node.testsuite)) collectCases(ts, out, depth + 1);
}

/** Parses a JUnit XML report. A missing, empty, malformed or test-less report is { ok: false, reason }. */
export function parseJunitXml(xml: string | Uint8Array | null | undefined, format?: TestFormat): ParseResult {
  if (xml === null || xml === undefined) return { ok: false, reason: 'report missing' };
  const bytes = typeof xml === 'string' ? Buffer.byteLength(xml) : xml.byteLength;
  if (bytes > MAX_REPORT_BYTES) return { ok: false, reason: `report larger than ${MAX_REPORT_BYTES} bytes` };
  const text = typeof xml === 'string' ? xml : Buffer.from(xml).toString('utf8');
  if (text.trim() === '') return { ok: false, reason: 'report empty' };
  if (/<!DOCTYPE/i.test(text)) return { ok: false, reason: 'report malformed: DOCTYPE not allowed' };
  const valid = XMLValidator.validate(text);
  if (valid !== true) return { ok: false, reason: `report malformed: ${valid.err.msg} (line ${valid.err.line})` };
  let doc: Node;
  try {
    doc = parser.parse(text) as Node;
  } catch (err) {
    return { ok: false, reason: `report malformed: ${(err as Error).message}` };
  }
  const roots = Object.keys(doc);
  if (roots.length !== 1 || (roots[0] !== 'testsuites' && roots[0] !== 'testsuite')) {
    return {
      ok: false,
      reason: `report malformed: root element must be <testsuites> or <testsuite>, got ${roots.map((r) => `<${r}>`).join(', ') || 'nothing'}`,
    };
  }
  const raw: Node[] = [];
  try {
    const root = roots[0] === 'testsuites' ? doc.testsuites : { testsuite: doc.testsuite };
    if (root !== null && typeof root === 'object') collectCases(root as Node, raw, 0);
  } catch (err) {
    return { ok: false, reason: `report malformed: ${(err as Error).message}` };
  }
  // One entry per test id; a test reported twice (e.g. pytest call + teardown error) keeps its worst outcome.
  const byKey = new Map<string, TestCaseResult>();
  for (const tc of raw) {
    const name = String(tc.name ?? '');
    const classname = String(tc.classname ?? '');
    const outcome = outcomeOf(tc, format);
    const key = `${classname}\u0000${name}`;
    const prev = byKey.get(key);
    if (!prev || RANK[outcome] > RANK[prev.outcome]) byKey.set(key, { name, classname, outcome });
  }
  const cases = [...byKey.values()];
  const count = (o: CaseOutcome) => cases.filter((c) => c.outcome === o).length;
  return {
    ok: true,
    report: { collected: cases.length, passed: count('passed'), failed: count('failed'), errors: count('error'), skipped: count('skipped'), cases },
  };
}

export type TestScore = { ok: true; fraction: number; report: TestReport } | { ok: false; fraction: 0; reason: string; report?: TestReport };

/**
 * The tests component: passed / expected. Any deviation from the declared test count (collection
 * errors, tests added or lost, a process that died early) scores 0 with a reason.
 */
export function scoreReport(parsed: ParseResult, expectedTests: number): TestScore {
  if (!parsed.ok) return { ok: false, fraction: 0, reason: parsed.reason };
  const r = parsed.report;
  if (r.collected !== expectedTests) {
    return { ok: false, fraction: 0, reason: `collected ${r.collected} tests, the task declares ${expectedTests}`, report: r };
  }
  return { ok: true, fraction: r.passed / expectedTests, report: r };
}
