// Requests the soak load cuts short on purpose, and raw connections that stop half way. A request
// that completes before our abort lands is checked like any other (outcome ok).
import { exchange, jsonHeaders, outcome } from './http_client.mjs';
import { rawExchange } from './raw_http.mjs';
import { CHAT, COMPLETIONS, chatBody, checkCompletion, checkStream, completionBody } from './valid_scenarios.mjs';

function longChat(ctx, rng, stream) {
  const extra = { max_tokens: 64 + Math.floor(rng() * 192), ignore_eos: true, stream };
  if (stream && rng() < 0.5) extra.stream_options = { include_usage: true };
  return chatBody(ctx, rng, extra);
}

// Streams, reads k events, then aborts.
function abortStreamAfterEvents(ctx, rng) {
  const body = longChat(ctx, rng, true);
  const k = 1 + Math.floor(rng() * 8);
  return exchange(ctx, {
    path: CHAT, body: JSON.stringify(body), headers: jsonHeaders(ctx),
    onResponse: (res, ctl) => checkStream(res, ctl, body, (n) => { if (n >= k) ctl.abort(); }),
  });
}

// Aborts after a few milliseconds: before the first byte of the answer, or while it streams.
function abortEarly(ctx, rng, path, stream) {
  const body = path === CHAT ? longChat(ctx, rng, stream)
    : completionBody(ctx, rng, { max_tokens: 64 + Math.floor(rng() * 192), ignore_eos: true, stream });
  return exchange(ctx, {
    path, body: JSON.stringify(body), headers: jsonHeaders(ctx), abortAfterMs: Math.floor(rng() * 60),
    onResponse: (res, ctl) => (stream ? checkStream(res, ctl, body) : checkCompletion(res, body, path === CHAT)),
  });
}

function postHead(ctx, path, contentLength) {
  const auth = ctx.apiKey ? `Authorization: Bearer ${ctx.apiKey}\r\n` : '';
  return `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${auth}` +
         `Content-Length: ${contentLength}\r\n\r\n`;
}

// Sends the headers and half of the body, then vanishes (destroy) or half-closes and waits: the
// server must then close the connection (or answer it); keeping it open is a leak.
async function halfRequest(ctx, rng, mode) {
  const body = JSON.stringify(chatBody(ctx, rng));
  const parts = [postHead(ctx, CHAT, body.length), body.slice(0, Math.floor(body.length / 2))];
  const r = await rawExchange({ host: ctx.host, port: ctx.port, parts, mode, timeoutMs: ctx.timeoutMs });
  if (mode === 'destroy') return outcome.aborted('connection destroyed half way through the body');
  if (r.timedOut) return outcome.unexpected(undefined, `half-closed connection still open after ${ctx.timeoutMs} ms`);
  return outcome.aborted(r.responses.length ? `answered ${r.responses[0].status}` : 'closed by the server');
}

// Half of the request headers, then the socket closes.
async function halfHeaders(ctx) {
  const head = postHead(ctx, COMPLETIONS, 100);
  await rawExchange({ host: ctx.host, port: ctx.port, parts: [head.slice(0, head.length / 2)], mode: 'destroy' });
  return outcome.aborted('connection destroyed half way through the headers');
}

const sock = (kind, weight, run) => ({ kind, path: CHAT, weight, reachesHandler: false, run });

export const abortScenarios = [
  { kind: 'abort_stream_after_k', path: CHAT, weight: 6, reachesHandler: true, run: abortStreamAfterEvents },
  { kind: 'abort_chat_early', path: CHAT, weight: 3, reachesHandler: true, run: (c, r) => abortEarly(c, r, CHAT, false) },
  { kind: 'abort_stream_early', path: CHAT, weight: 3, reachesHandler: true, run: (c, r) => abortEarly(c, r, CHAT, true) },
  { kind: 'abort_completion_early', path: COMPLETIONS, weight: 2, reachesHandler: true,
    run: (c, r) => abortEarly(c, r, COMPLETIONS, false) },
  sock('half_body_destroy', 2, (c, r) => halfRequest(c, r, 'destroy')),
  sock('half_body_half_close', 2, (c, r) => halfRequest(c, r, 'half-close')),
  { kind: 'half_headers_destroy', path: COMPLETIONS, weight: 1, reachesHandler: false, run: halfHeaders },
];
