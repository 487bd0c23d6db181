// The soak's last phase: graceful shutdown under load. Streams are opened and each has its first
// event; then the server gets SIGTERM. Every open stream must still end with [DONE] (the drain
// answers what is in progress), and a request sent after the signal must get a complete answer
// (503) or find the port closed -- never a reset or a hang.
import { exchange, jsonHeaders, outcome } from './http_client.mjs';
import { CHAT, chatBody, checkStream } from './valid_scenarios.mjs';

function openStream(ctx, rng, firstEvent) {
  const body = chatBody(ctx, rng, { max_tokens: 48, ignore_eos: true, stream: true });
  return exchange(ctx, {
    path: CHAT, body: JSON.stringify(body), headers: jsonHeaders(ctx),
    onResponse: (res, ctl) => checkStream(res, ctl, body, (n) => { if (n === 1) firstEvent(); }),
  });
}

async function requestAfterSignal(ctx, rng) {
  try {
    const res = await fetch(ctx.base + CHAT, { method: 'POST', body: JSON.stringify(chatBody(ctx, rng)),
                                               headers: jsonHeaders(ctx), signal: AbortSignal.timeout(ctx.timeoutMs) });
    const text = await res.text();
    if (text.length === 0) return outcome.noAnswer('empty body', res.status);
    return res.status === 503 || res.status === 200 ? outcome.ok(res.status) : outcome.unexpected(res.status, text.slice(0, 120));
  } catch (e) {
    if (e?.cause?.code === 'ECONNREFUSED') return outcome.ok(undefined);  // the listener is closed
    return outcome.noAnswer(`${e.name}: ${e.cause?.code ?? e.message}`);
  }
}

// Returns records {kind, outcome, ...} for the table.
export async function drainUnderLoad(ctx, rng, numStreams = 8) {
  let started = 0, release;
  const allStarted = new Promise((r) => { release = r; });
  const streams = Array.from({ length: numStreams }, () => openStream(ctx, rng, () => {
    if (++started === numStreams) release();
  }));
  await Promise.race([allStarted, Promise.all(streams)]);
  process.kill(ctx.serverPid, 'SIGTERM');
  await new Promise((r) => setTimeout(r, 200));
  const late = await requestAfterSignal(ctx, rng);
  const records = (await Promise.all(streams)).map((r) => ({ kind: 'drain_open_stream', path: CHAT, ...r }));
  records.push({ kind: 'drain_request_after_sigterm', path: CHAT, ...late });
  return records;
}
