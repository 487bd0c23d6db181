// What the soak reads from the server while and after it runs: /metrics (Prometheus text) and the
// resident set size of its process (/proc/<pid>/status VmRSS).
import { readFileSync } from 'node:fs';

// "name{a="x",b="y"} 12" lines -> [{name, labels: {a, b}, value}].
export function parsePrometheus(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    if (line.length === 0 || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

export function gauge(samples, name) {
  const s = samples.find((x) => x.name === name);
  return s ? s.value : undefined;
}

export async function fetchMetrics(ctx) {
  const headers = ctx.apiKey ? { Authorization: `Bearer ${ctx.apiKey}` } : {};
  const res = await fetch(`${ctx.base}/metrics`, { headers, signal: AbortSignal.timeout(ctx.timeoutMs) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${text.slice(0, 120)}`);
  return parsePrometheus(text);
}

// Resident set size in bytes, or null once the process is gone.
export function readRss(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

function median(values) {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

// "RSS is flat": the median of the samples in the last 20% of the load against the median of those
// in the 20-40% window (the first 20% is warm-up: pools and caches filling). Allowed growth: 5% of
// the baseline or 8 MiB, whichever is larger.
export const RSS_TOLERANCE = { fraction: 0.05, bytes: 8 * 1024 * 1024 };

export function rssVerdict(samples, durationMs) {
  const window = (lo, hi) => samples.filter((s) => s.t >= lo * durationMs && s.t < hi * durationMs).map((s) => s.rss);
  const base = median(window(0.2, 0.4));
  const end = median(window(0.8, 1.0001));
  const allowed = Math.max(base * RSS_TOLERANCE.fraction, RSS_TOLERANCE.bytes);
  const rss = samples.map((s) => s.rss);
  return {
    numSamples: samples.length,
    first: rss[0], min: Math.min(...rss), max: Math.max(...rss), last: rss[rss.length - 1],
    baseMedian: base, endMedian: end, allowedGrowth: allowed,
    flat: Number.isFinite(base) && Number.isFinite(end) && end - base <= allowed,
  };
}
