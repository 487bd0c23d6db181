// Valid requests in the less common shapes of HTTP/1.1, on raw sockets: pipelining, a chunked
// request body, Expect: 100-continue, an error and a good request on one keep-alive connection;
// and long prompts given as token ids (chunked prefill, KV pressure, preemption with a small pool).
import { exchange, jsonHeaders, outcome } from './http_client.mjs';
import { rawExchange } from './raw_http.mjs';
import { COMPLETIONS, checkCompletion } from './valid_scenarios.mjs';

function authLine(ctx) { return ctx.apiKey ? `Authorization: Bearer ${ctx.apiKey}\r\n` : ''; }

// Sends `parts` on one connection and expects the listed statuses in order.
async function rawStatuses(ctx, parts, statuses) {
  const r = await rawExchange({ host: ctx.host, port: ctx.port, parts, expected: statuses.length, timeoutMs: ctx.timeoutMs });
  if (r.parseError) return outcome.unexpected(undefined, r.parseError);
  if (r.responses.length < statuses.length) {
    return outcome.noAnswer(`${r.responses.length} of ${statuses.length} answers${r.error ? `, ${r.error}` : ''}${r.timedOut ? ', timed out' : ''}`);
  }
  const got = r.responses.map((x) => x.status);
  if (got.join() !== statuses.join()) return outcome.unexpected(got[0], `statuses ${got}, expected ${statuses}`);
  return outcome.ok(got[got.length - 1]);
}

const HEALTH = 'GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n';

function smallCompletion(ctx) {
  return JSON.stringify({ model: ctx.model, prompt: 'the river', max_tokens: 4 });
}

function chunkedBody(ctx) {
  const body = smallCompletion(ctx);
  const half = Math.floor(body.length / 2);
  const chunk = (s) => `${s.length.toString(16)}\r\n${s}\r\n`;
  return [`POST ${COMPLETIONS} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${authLine(ctx)}` +
          'Transfer-Encoding: chunked\r\n\r\n', chunk(body.slice(0, half)), chunk(body.slice(half)) + '0\r\n\r\n'];
}

function expectContinue(ctx) {
  const body = smallCompletion(ctx);
  return [`POST ${COMPLETIONS} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${authLine(ctx)}` +
          `Expect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`, body];
}

// A request with a JSON error, then a GET, pipelined on one keep-alive connection.
function errorThenGet(ctx) {
  const bad = '{"messages": 1';
  return [`POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${authLine(ctx)}` +
          `Content-Length: ${bad.length}\r\n\r\n${bad}${HEALTH}`];
}

// A prompt of token ids that fills most of the context: the longest prompts the soak sends.
function longIdsPrompt(ctx, rng) {
  const maxTokens = 1 + Math.floor(rng() * 16);
  const n = Math.floor(ctx.contextTokens * (0.3 + 0.6 * rng())) - maxTokens;
  const prompt = Array.from({ length: n }, () => 10 + Math.floor(rng() * 1000));
  const body = { model: ctx.model, prompt, max_tokens: maxTokens, temperature: 0 };
  return exchange(ctx, { path: COMPLETIONS, body: JSON.stringify(body), headers: jsonHeaders(ctx),
                         onResponse: (res) => checkCompletion(res, body, false) });
}

export const wireScenarios = [
  { kind: 'pipelined_gets', path: '/health', weight: 2, run: (ctx) => rawStatuses(ctx, [HEALTH + HEALTH + HEALTH], [200, 200, 200]) },
  { kind: 'chunked_request_body', path: COMPLETIONS, weight: 1, reachesHandler: true,
    run: (ctx) => rawStatuses(ctx, chunkedBody(ctx), [200]) },
  { kind: 'expect_100_continue', path: COMPLETIONS, weight: 1, reachesHandler: true,
    run: (ctx) => rawStatuses(ctx, expectContinue(ctx), [200]) },
  // The 400 is counted under the chat path; the GET is not counted.
  { kind: 'error_then_get_keepalive', path: '/v1/chat/completions', weight: 1, reachesHandler: true,
    run: async (ctx) => ({ ...(await rawStatuses(ctx, errorThenGet(ctx), [400, 200])), status: 400 }) },
  { kind: 'completion_long_ids', path: COMPLETIONS, weight: 3, reachesHandler: true, run: longIdsPrompt },
];
