// The soak's checks and its table.
import { RSS_TOLERANCE } from './server_probe.mjs';

export const OUTCOMES = ['ok', 'aborted', 'unexpected', 'no_answer'];
const MB = 1024 * 1024;

export function tally(records) {
  const byKind = new Map();
  for (const r of records) {
    if (!byKind.has(r.kind)) byKind.set(r.kind, { kind: r.kind, sent: 0, ok: 0, aborted: 0, unexpected: 0, no_answer: 0, examples: [], ms: [] });
    const row = byKind.get(r.kind);
    row.sent += 1;
    if (r.ms !== undefined) row.ms.push(r.ms);
    row[r.outcome] += 1;
    if ((r.outcome === 'unexpected' || r.outcome === 'no_answer') && row.examples.length < 3) {
      row.examples.push(`${r.outcome}${r.status ? ` (${r.status})` : ''}: ${r.detail}`);
    }
  }
  return [...byKind.values()].sort((a, b) => a.kind.localeCompare(b.kind));
}

// hichat_requests_total against what the client saw, per generation endpoint:
//   every code other than 200/499 exactly equals the client's answers with that code;
//   client 200s <= server 200s <= server 200s + 499s <= client 200s + our aborts and timeouts (an
//   abort that lands after the answer is counted 200 by the server; one before the request reached
//   it, not at all).
export function compareCounters(records, samples, paths) {
  const rows = [];
  for (const path of paths) {
    const server = new Map();
    for (const s of samples) {
      if (s.name === 'hichat_requests_total' && s.labels.endpoint === path) server.set(Number(s.labels.code), s.value);
    }
    const mine = records.filter((r) => r.reachesHandler && r.path === path);
    const client = new Map();
    for (const r of mine) if ((r.outcome === 'ok' || r.outcome === 'unexpected') && r.status) client.set(r.status, (client.get(r.status) ?? 0) + 1);
    const aborted = mine.filter((r) => r.outcome === 'aborted' || r.closedByClient).length;
    const c200 = client.get(200) ?? 0, s200 = server.get(200) ?? 0, s499 = server.get(499) ?? 0;
    rows.push({ path, code: '200+499', client: `${c200} ok + ${aborted} closed`, server: `${s200} + ${s499}`,
                ok: c200 <= s200 && s200 + s499 <= c200 + aborted });
    const codes = new Set([...server.keys(), ...client.keys()].filter((c) => c !== 200 && c !== 499));
    for (const code of [...codes].sort()) {
      const c = client.get(code) ?? 0, s = server.get(code) ?? 0;
      rows.push({ path, code: String(code), client: String(c), server: String(s), ok: c === s });
    }
  }
  return rows;
}

const pad = (v, n) => String(v).padEnd(n);
const lpad = (v, n) => String(v).padStart(n);
function percentile(values, p) {
  if (values.length === 0) return '';
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}
const mb = (b) => (Number.isFinite(b) ? `${(b / MB).toFixed(1)} MB` : 'n/a');

export function printTable({ rows, rss, kv, counters, checks, elapsedS, concurrency }) {
  const total = rows.reduce((a, r) => a + r.sent, 0);
  console.log(`\nsoak: ${total} requests in ${elapsedS.toFixed(0)} s at concurrency ${concurrency} (${(total / elapsedS).toFixed(1)} req/s)\n`);
  console.log(`${pad('kind', 28)}${lpad('sent', 7)}${OUTCOMES.map((o) => lpad(o, 11)).join('')}${lpad('p50 ms', 8)}${lpad('max ms', 8)}`);
  for (const r of rows) {
    console.log(`${pad(r.kind, 28)}${lpad(r.sent, 7)}${OUTCOMES.map((o) => lpad(r[o], 11)).join('')}` +
                `${lpad(percentile(r.ms, 0.5), 8)}${lpad(percentile(r.ms, 1), 8)}`);
  }
  const sum = (o) => rows.reduce((a, r) => a + r[o], 0);
  console.log(`${pad('total', 28)}${lpad(total, 7)}${OUTCOMES.map((o) => lpad(sum(o), 11)).join('')}`);
  const failing = rows.filter((r) => r.examples.length > 0);
  if (failing.length) {
    console.log('\nfailures (first 3 per kind):');
    for (const r of failing) for (const e of r.examples) console.log(`  ${r.kind}: ${e}`);
  }
  if (rss) {
    console.log(`\nRSS (${rss.numSamples} samples): start ${mb(rss.first)}, min ${mb(rss.min)}, max ${mb(rss.max)}, ` +
                `median 20-40% ${mb(rss.baseMedian)}, median last 20% ${mb(rss.endMedian)}, after settle ${mb(rss.afterSettle)} ` +
                `(allowed growth ${mb(rss.allowedGrowth)}: ${RSS_TOLERANCE.fraction * 100}% or ${mb(RSS_TOLERANCE.bytes)})`);
  }
  console.log(`KV blocks used: max seen ${kv.maxUsed ?? 'n/a'}, at end ${kv.used} (free ${kv.free}); ` +
              `running ${kv.running}, waiting ${kv.waiting}; settled after ${kv.settleMs} ms`);
  console.log('\nserver hichat_requests_total vs client:');
  for (const c of counters) console.log(`  ${pad(c.path, 22)} ${pad(c.code, 8)} client ${pad(c.client, 24)} server ${pad(c.server, 14)} ${c.ok ? 'ok' : 'MISMATCH'}`);
  console.log('\nchecks:');
  for (const c of checks) console.log(`  ${c.ok ? 'PASS' : 'FAIL'}  ${c.name}${c.detail ? `: ${c.detail}` : ''}`);
}
