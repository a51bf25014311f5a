// `sandgym report`: one self-contained HTML page about an archive (no scripts, no external resources:
// inline SVG drawn here): outcomes, reward distribution, pass rate per task, episode lengths and
// failure causes over time. Pure: records in, HTML out.
import { causeOfError, causeOfZeroReason, isScored, zeroReasonClass } from '../outcomes.js';
import type { EpisodeRecord } from './format.js';

/** Scored: the env ended it (success or failure on the shared taxonomy, observability/outcomes.ts). */
export const isScoredRecord = (r: EpisodeRecord): boolean => isScored(r.outcome);

/**
 * Failure causes of an episode on the one taxonomy of sandgym_failures_total (outcomes.ts): each
 * request error (invalid_action...), then the episode's own: an error's cause by its code, a graded
 * zero's by its zero_reason class (oom, agent_timeout, agent_error), `abandoned` / `shutdown`, and
 * `not_solved` for a scored episode below full marks without a zero_reason. Empty for a success.
 */
export function failureCauses(r: EpisodeRecord): string[] {
  const out = r.request_errors.map((e) => causeOfError(e.code) as string);
  if (r.success) return out;
  if (r.outcome === 'abandoned' || r.outcome === 'shutdown') out.push(r.outcome);
  else if (r.outcome === 'failure') {
    const zero = r.grade?.zero_reason;
    out.push(typeof zero === 'string' ? causeOfZeroReason(zeroReasonClass(zero)) : 'not_solved');
  } else out.push(causeOfError(r.error?.code ?? 'ENV_ERROR'));
  return out;
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const fmt = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(3).replace(/0+$/, '').replace(/\.$/, ''));
const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

/** A histogram of values as SVG bars with axis labels. */
function histogram(values: number[], title: string, opts: { bins?: number; integer?: boolean } = {}): string {
  if (values.length === 0) return `<p class="empty">${esc(title)}: no data</p>`;
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (lo === hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  const n = opts.integer ? Math.min(30, Math.max(1, Math.ceil(hi - lo))) : (opts.bins ?? 10);
  const width = (hi - lo) / n;
  const counts = new Array<number>(n).fill(0);
  for (const v of values) counts[Math.min(n - 1, Math.floor((v - lo) / width))]!++;
  const W = 560;
  const H = 200;
  const pad = 36;
  const max = Math.max(...counts);
  const bw = (W - 2 * pad) / n;
  const bars = counts
    .map((c, i) => {
      const h = max === 0 ? 0 : ((H - 2 * pad) * c) / max;
      const x = pad + i * bw;
      const y = H - pad - h;
      const from = lo + i * width;
      return `<rect x="${x + 1}" y="${y}" width="${Math.max(1, bw - 2)}" height="${h}" fill="#4e79a7"><title>${fmt(from)} to ${fmt(from + width)}: ${c}</title></rect>${c > 0 ? `<text x="${x + bw / 2}" y="${y - 3}" text-anchor="middle" class="n">${c}</text>` : ''}`;
    })
    .join('');
  return `<figure><figcaption>${esc(title)}</figcaption><svg role="img" aria-label="${esc(title)}" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">
<line x1="${pad}" y1="${H - pad}" x2="${W - pad}" y2="${H - pad}" stroke="#888"/>${bars}
<text x="${pad}" y="${H - pad + 16}" class="ax">${fmt(lo)}</text><text x="${W - pad}" y="${H - pad + 16}" text-anchor="end" class="ax">${fmt(hi)}</text>
<text x="${pad - 4}" y="${pad}" text-anchor="end" class="ax">${max}</text></svg></figure>`;
}

/** Pass rate per task (or env for task-less envs) as horizontal bars, with attempts. */
function passRates(records: EpisodeRecord[]): string {
  const by = new Map<string, { pass: number; scored: number }>();
  for (const r of records) {
    if (!isScoredRecord(r)) continue;
    const key = r.task ? `${r.env_id} · ${r.task.id}` : r.env_id;
    const e = by.get(key) ?? { pass: 0, scored: 0 };
    e.scored++;
    if (r.success) e.pass++;
    by.set(key, e);
  }
  if (by.size === 0) return '<p class="empty">Pass rate per task: no scored episodes</p>';
  const rows = [...by.entries()].sort(([a], [b]) => a.localeCompare(b));
  const W = 560;
  const row = 22;
  const label = 220;
  const H = rows.length * row + 10;
  const bars = rows
    .map(([k, e], i) => {
      const rate = e.pass / e.scored;
      const y = 5 + i * row;
      const w = (W - label - 90) * rate;
      return `<g class="task" data-task="${esc(k)}" data-rate="${rate}"><text x="${label - 6}" y="${y + 15}" text-anchor="end" class="lab">${esc(k.length > 34 ? `${k.slice(0, 33)}…` : k)}</text><rect x="${label}" y="${y + 3}" width="${W - label - 90}" height="${row - 6}" fill="#eee"/><rect x="${label}" y="${y + 3}" width="${w}" height="${row - 6}" fill="#59a14f"><title>${esc(k)}: ${e.pass}/${e.scored}</title></rect><text x="${W - 84}" y="${y + 15}" class="n">${(rate * 100).toFixed(0)}% (${e.pass}/${e.scored})</text></g>`;
    })
    .join('');
  return `<figure><figcaption>Pass rate per task (success among scored episodes)</figcaption><svg role="img" aria-label="pass rate per task" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">${bars}</svg></figure>`;
}

/** Failure causes over time: stacked bars per time bucket (by episode end), one colour per cause. */
function causesOverTime(records: EpisodeRecord[], buckets = 12): string {
  const failed = records.flatMap((r) => failureCauses(r).map((cause) => ({ cause, t: Date.parse(r.ended_at) })));
  if (failed.length === 0) return '<p class="empty">Failure causes over time: no failures</p>';
  const causes = [...new Set(failed.map((f) => f.cause))].sort();
  const t0 = Math.min(...records.map((r) => Date.parse(r.ended_at)));
  const t1 = Math.max(...records.map((r) => Date.parse(r.ended_at)));
  const span = Math.max(1, t1 - t0);
  const grid = Array.from({ length: buckets }, () => new Map<string, number>());
  for (const f of failed) {
    const b = grid[Math.min(buckets - 1, Math.floor(((f.t - t0) / span) * buckets))] as Map<string, number>;
    b.set(f.cause, (b.get(f.cause) ?? 0) + 1);
  }
  const W = 560;
  const H = 220;
  const pad = 36;
  const max = Math.max(...grid.map((b) => [...b.values()].reduce((a, c) => a + c, 0)));
  const bw = (W - 2 * pad) / buckets;
  let bars = '';
  grid.forEach((b, i) => {
    let y = H - pad;
    for (const [ci, c] of causes.entries()) {
      const n = b.get(c) ?? 0;
      if (n === 0) continue;
      const h = ((H - 2 * pad) * n) / max;
      y -= h;
      bars += `<rect x="${pad + i * bw + 1}" y="${y}" width="${Math.max(1, bw - 2)}" height="${h}" fill="${PALETTE[ci % PALETTE.length]}"><title>${esc(c)}: ${n}</title></rect>`;
    }
  });
  const legend = causes
    .map(
      (c, i) => `<span class="key"><i style="background:${PALETTE[i % PALETTE.length]}"></i>${esc(c)} (${failed.filter((f) => f.cause === c).length})</span>`,
    )
    .join(' ');
  const iso = (t: number) => new Date(t).toISOString().replace('T', ' ').slice(0, 19);
  return `<figure><figcaption>Failure causes over time (by episode end, ${buckets} buckets; causes as in sandgym_failures_total)</figcaption><svg role="img" aria-label="failure causes over time" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">
<line x1="${pad}" y1="${H - pad}" x2="${W - pad}" y2="${H - pad}" stroke="#888"/>${bars}
<text x="${pad}" y="${H - pad + 16}" class="ax">${iso(t0)}</text><text x="${W - pad}" y="${H - pad + 16}" text-anchor="end" class="ax">${iso(t1)}</text>
<text x="${pad - 4}" y="${pad}" text-anchor="end" class="ax">${max}</text></svg><div class="legend">${legend}</div></figure>`;
}

export interface ReportSummary {
  episodes: number;
  scored: number;
  passed: number;
  outcomes: Record<string, number>;
  request_errors: number;
}

export function summarise(records: EpisodeRecord[]): ReportSummary {
  const outcomes: Record<string, number> = {};
  for (const r of records) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
  return {
    episodes: records.length,
    scored: records.filter(isScoredRecord).length,
    passed: records.filter((r) => r.success).length,
    outcomes,
    request_errors: records.reduce((a, r) => a + r.request_errors.length, 0),
  };
}

/** The whole page. `source` names the archive in the title. */
export function renderReport(records: EpisodeRecord[], source: string, generatedAt = new Date()): string {
  const s = summarise(records);
  const t = records.map((r) => Date.parse(r.started_at));
  const range = records.length
    ? `${new Date(Math.min(...t)).toISOString()} to ${new Date(Math.max(...records.map((r) => Date.parse(r.ended_at)))).toISOString()}`
    : 'no episodes';
  const envs = [...new Set(records.map((r) => r.env_id))].sort();
  const outcomeRows = Object.entries(s.outcomes)
    .sort()
    .map(([k, v]) => `<tr><td>${esc(k)}</td><td class="num" data-outcome="${esc(k)}">${v}</td></tr>`)
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sandgym archive report: ${esc(source)}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px;margin:0 0 4px} .sub{color:#666;margin-bottom:16px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(580px,1fr));gap:16px}
figure{margin:0;border:1px solid #ddd;border-radius:6px;padding:8px;background:#fff} figcaption{font-weight:600;margin-bottom:4px}
table{border-collapse:collapse} td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:left} .num{text-align:right}
.stats{display:flex;gap:24px;margin:12px 0} .stat b{display:block;font-size:22px}
svg text{font-size:11px;fill:#333} svg .ax{fill:#666} .legend{margin-top:4px} .key{margin-right:12px;white-space:nowrap}
.key i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle} .empty{color:#888}
</style></head><body>
<h1>sandgym archive report</h1>
<div class="sub">${esc(source)} · ${esc(range)} · envs: ${esc(envs.join(', ') || 'none')} · generated ${esc(generatedAt.toISOString())}</div>
<div class="stats">
<div class="stat" id="stat-episodes"><b>${s.episodes}</b>episodes</div>
<div class="stat" id="stat-scored"><b>${s.scored}</b>scored</div>
<div class="stat" id="stat-pass"><b>${s.scored ? ((100 * s.passed) / s.scored).toFixed(1) : '0.0'}%</b>pass rate (${s.passed}/${s.scored})</div>
<div class="stat" id="stat-request-errors"><b>${s.request_errors}</b>request errors (invalid actions...)</div>
</div>
<div class="grid">
${histogram(
  records.filter(isScoredRecord).map((r) => r.score),
  'Reward distribution (score of scored episodes)',
)}
${passRates(records)}
${histogram(
  records.map((r) => r.length),
  'Episode lengths (steps)',
  { integer: true },
)}
${causesOverTime(records)}
<figure><figcaption>Outcomes</figcaption><table><tr><th>outcome</th><th>episodes</th></tr>${outcomeRows}</table></figure>
</div>
</body></html>
`;
}
