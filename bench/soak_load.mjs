#!/usr/bin/env node
// Soak load for `hichat serve` (driven by bench/soak.sh; usable alone against a running server):
// --concurrency workers, each looping for --duration-s over a weighted mix of valid, streamed,
// invalid and aborted requests and GETs (bench/soak/*_scenarios.mjs). Meanwhile it samples the
// server's RSS (--server-pid) and /metrics. At the end it waits (bounded, --settle-s) for the engine
// to go idle, then checks: every request got an answer, every answer was the expected one, no KV
// block is in use, RSS is flat, hichat_requests_total matches what was sent; last, it sends the
// server SIGTERM with streams open (bench/soak/drain_phase.mjs): they must all finish. Prints a
// table; exit code 1 if a check failed, 2 on bad flags.
import { parseArgs } from 'node:util';
import { abortScenarios } from './soak/abort_scenarios.mjs';
import { drainUnderLoad } from './soak/drain_phase.mjs';
import { authScenarios, invalidScenarios } from './soak/invalid_scenarios.mjs';
import { compareCounters, printTable, tally } from './soak/report.mjs';
import { fetchMetrics, gauge, readRss, rssVerdict } from './soak/server_probe.mjs';
import { CHAT, COMPLETIONS, validScenarios } from './soak/valid_scenarios.mjs';
import { wireScenarios } from './soak/wire_scenarios.mjs';

const USAGE = `usage: node bench/soak_load.mjs --url http://127.0.0.1:PORT [--model NAME] [--concurrency 16]
       [--duration-s 600] [--api-key KEY] [--server-pid PID] [--rss-interval-s 2] [--settle-s 30]
       [--timeout-s 300] [--max-body-mb 8] [--seed 1] [--no-drain]
With --server-pid, the run ends by sending the server SIGTERM while streams are open (unless --no-drain).`;

function options() {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' }, model: { type: 'string' }, concurrency: { type: 'string', default: '16' },
      'duration-s': { type: 'string', default: '600' }, 'api-key': { type: 'string' },
      'server-pid': { type: 'string' }, 'rss-interval-s': { type: 'string', default: '2' },
      'settle-s': { type: 'string', default: '30' }, 'timeout-s': { type: 'string', default: '300' },
      'max-body-mb': { type: 'string', default: '8' }, seed: { type: 'string', default: '1' },
      'no-drain': { type: 'boolean' }, help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const num = (name, min) => {
    const v = Number(values[name]);
    if (!Number.isFinite(v) || v < min) throw new Error(`--${name} must be a number >= ${min}, got ${values[name]}`);
    return v;
  };
  if (!values.url) throw new Error('--url is required');
  const url = new URL(values.url);
  return {
    base: url.origin, host: url.hostname, port: Number(url.port || 80), model: values.model,
    apiKey: values['api-key'], serverPid: values['server-pid'] ? num('server-pid', 1) : null,
    concurrency: num('concurrency', 1), durationMs: num('duration-s', 1) * 1000,
    rssIntervalMs: num('rss-interval-s', 0.1) * 1000, settleMs: num('settle-s', 0) * 1000,
    drain: !values['no-drain'], timeoutMs: num('timeout-s', 1) * 1000, maxBodyBytes: num('max-body-mb', 1) * 1024 * 1024, seed: num('seed', 0),
  };
}

// mulberry32: a small seeded generator, so that a run's request mix can be replayed.
function rngFrom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function scenarioPicker(ctx) {
  const all = [...validScenarios, ...wireScenarios, ...invalidScenarios, ...abortScenarios, ...(ctx.apiKey ? authScenarios : [])];
  const total = all.reduce((a, s) => a + s.weight, 0);
  return (rng) => {
    let x = rng() * total;
    for (const s of all) if ((x -= s.weight) < 0) return s;
    return all[all.length - 1];
  };
}

async function worker(ctx, id, pick, records, endAt) {
  const rng = rngFrom(ctx.seed * 7919 + id);
  while (Date.now() < endAt) {
    const s = pick(rng);
    const start = Date.now();
    const r = await s.run(ctx, rng);
    records.push({ kind: s.kind, path: s.path, reachesHandler: !!s.reachesHandler, ms: Date.now() - start, ...r });
  }
}

// Every rss-interval: RSS; every 5 s: /metrics (KV blocks in use). A failed /metrics GET is a
// request without an answer like any other.
function startSampler(ctx, t0, rss, kv, records) {
  const rssTimer = setInterval(() => {
    const v = ctx.serverPid ? readRss(ctx.serverPid) : null;
    if (v !== null) rss.push({ t: Date.now() - t0, rss: v });
  }, ctx.rssIntervalMs);
  const kvTimer = setInterval(async () => {
    try {
      const used = gauge(await fetchMetrics(ctx), 'hichat_kv_blocks_used');
      if (used !== undefined) kv.maxUsed = Math.max(kv.maxUsed ?? 0, used);
    } catch (e) {
      records.push({ kind: 'sampler_metrics', path: '/metrics', outcome: 'no_answer', detail: e.message });
    }
  }, 5000);
  return () => { clearInterval(rssTimer); clearInterval(kvTimer); };
}

// After the load: poll /metrics until no KV block is used and nothing runs or waits (bounded).
async function settle(ctx, kv) {
  const t0 = Date.now();
  let samples = [];
  for (;;) {
    samples = await fetchMetrics(ctx);
    Object.assign(kv, {
      used: gauge(samples, 'hichat_kv_blocks_used'), free: gauge(samples, 'hichat_kv_blocks_free'),
      running: gauge(samples, 'hichat_num_requests_running'), waiting: gauge(samples, 'hichat_num_requests_waiting'),
    });
    if ((kv.used === 0 && kv.running === 0 && kv.waiting === 0) || Date.now() - t0 >= ctx.settleMs) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  kv.settleMs = Date.now() - t0;
  return samples;
}

async function serverInfo(ctx) {
  const headers = ctx.apiKey ? { Authorization: `Bearer ${ctx.apiKey}` } : {};
  const res = await fetch(`${ctx.base}/v1/models`, { headers });
  if (res.status !== 200) throw new Error(`GET /v1/models answered ${res.status}`);
  const model = (await res.json()).data[0];
  ctx.model ??= model.id;
  ctx.contextTokens = model.max_model_len;
}

function checksOf(rows, rss, kv, counters, ctx, alive, drained) {
  const sum = (o) => rows.reduce((a, r) => a + r[o], 0);
  const checks = [
    { name: 'every request got an answer', ok: sum('no_answer') === 0, detail: `${sum('no_answer')} without` },
    { name: 'every answer was the expected one', ok: sum('unexpected') === 0, detail: `${sum('unexpected')} unexpected` },
    { name: 'no KV block in use at the end', ok: kv.used === 0 && kv.running === 0 && kv.waiting === 0,
      detail: `hichat_kv_blocks_used ${kv.used}` },
    { name: 'server request counters match the client', ok: counters.every((c) => c.ok) },
  ];
  if (ctx.serverPid) {
    checks.push({ name: 'server RSS is flat', ok: rss.flat,
                  detail: `${((rss.endMedian - rss.baseMedian) / 1048576).toFixed(1)} MB growth` });
    checks.push({ name: 'server alive at the end of the load', ok: alive });
  }
  if (drained) {
    const good = drained.filter((r) => r.outcome === 'ok').length;
    checks.push({ name: 'SIGTERM with streams open: all finish, a late request is answered or refused',
                  ok: good === drained.length, detail: `${good} of ${drained.length}` });
  }
  return checks;
}

async function main() {
  let ctx;
  try {
    ctx = options();
  } catch (e) {
    console.error(`soak_load: ${e.message}\n${USAGE}`);
    process.exit(2);
  }
  await serverInfo(ctx);
  const records = [], rssSamples = [], kv = {};
  const t0 = Date.now();
  const stopSampler = startSampler(ctx, t0, rssSamples, kv, records);
  const pick = scenarioPicker(ctx);
  const workers = Array.from({ length: ctx.concurrency }, (_, i) => worker(ctx, i, pick, records, t0 + ctx.durationMs));
  await Promise.all(workers);
  stopSampler();
  const elapsedS = (Date.now() - t0) / 1000;
  const samples = await settle(ctx, kv);
  const rss = ctx.serverPid ? { ...rssVerdict(rssSamples, ctx.durationMs), afterSettle: readRss(ctx.serverPid) } : null;
  const counters = compareCounters(records, samples, [CHAT, COMPLETIONS]);
  const alive = ctx.serverPid ? readRss(ctx.serverPid) !== null : true;
  const drained = ctx.serverPid && ctx.drain && alive ? await drainUnderLoad(ctx, rngFrom(ctx.seed)) : null;
  const rows = tally(drained ? [...records, ...drained] : records);
  const checks = checksOf(rows, rss, kv, counters, ctx, alive, drained);
  printTable({ rows, rss, kv, counters, checks, elapsedS, concurrency: ctx.concurrency });
  process.exit(checks.every((c) => c.ok) ? 0 : 1);
}

main().catch((e) => {
  console.error(`soak_load: ${e.stack ?? e}`);
  process.exit(1);
});
