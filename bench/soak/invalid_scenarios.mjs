// Invalid requests of the soak load: each must get its 4xx with the OpenAI error shape (and, where
// the field is known, the param naming it). `reachesHandler`: the OpenAI handler answers it, so the
// server counts it in hichat_requests_total under its path and status.
import { exchange, expectError, jsonHeaders, outcome } from './http_client.mjs';
import { rawExchange } from './raw_http.mjs';
import { CHAT, COMPLETIONS, chatBody, completionBody, words } from './valid_scenarios.mjs';

function postRaw(ctx, path, body, status, params, headers = jsonHeaders(ctx)) {
  return exchange(ctx, { path, body, headers, onResponse: (res) => expectError(res, status, params) });
}

// A chat body with `patch` merged in, sent as JSON.
function chatWith(ctx, rng, patch, status, params) {
  return postRaw(ctx, CHAT, JSON.stringify({ ...chatBody(ctx, rng), ...patch }), status, params);
}

function tooLongPrompt(ctx, rng) {
  return words(rng, ctx.contextTokens * 2);  // every word is at least one token
}

function nested(depth) {
  return '['.repeat(depth) + ']'.repeat(depth);
}

// Raw bytes that fetch() cannot send: the reply must be `status` (connection closed afterwards).
async function rawExpect(ctx, parts, status) {
  const r = await rawExchange({ host: ctx.host, port: ctx.port, parts, timeoutMs: ctx.timeoutMs });
  if (r.timedOut) return outcome.noAnswer(`no answer within ${ctx.timeoutMs} ms`);
  if (r.parseError) return outcome.unexpected(undefined, r.parseError);
  if (r.responses.length === 0) return outcome.noAnswer(r.error ? `socket error ${r.error}` : 'closed without a reply');
  const got = r.responses[0].status;
  return got === status ? outcome.ok(got) : outcome.unexpected(got, `expected ${status}: ${r.responses[0].body.slice(0, 120)}`);
}

const app = (kind, path, weight, run) => ({ kind, path, weight, reachesHandler: true, run });
const http = (kind, path, weight, run) => ({ kind, path, weight, reachesHandler: false, run });

export const invalidScenarios = [
  app('bad_json', CHAT, 3, (ctx) => postRaw(ctx, CHAT, '{"messages": [{"role": "user", "content": "hi"}', 400)),
  app('body_not_object', COMPLETIONS, 1, (ctx) => postRaw(ctx, COMPLETIONS, '[1, 2, 3]', 400)),
  app('empty_body', CHAT, 1, (ctx) => postRaw(ctx, CHAT, '', 400)),
  app('messages_wrong_type', CHAT, 2, (ctx, rng) => chatWith(ctx, rng, { messages: 'hello' }, 400, ['messages'])),
  app('temperature_wrong_type', CHAT, 1, (ctx, rng) => chatWith(ctx, rng, { temperature: 'hot' }, 400, ['temperature'])),
  app('max_tokens_float', COMPLETIONS, 1, (ctx, rng) =>
    postRaw(ctx, COMPLETIONS, JSON.stringify(completionBody(ctx, rng, { max_tokens: 2.5 })), 400, ['max_tokens'])),
  app('stream_wrong_type', CHAT, 1, (ctx, rng) => chatWith(ctx, rng, { stream: 'yes' }, 400, ['stream'])),
  app('bad_role', CHAT, 1, (ctx, rng) =>
    chatWith(ctx, rng, { messages: [{ role: 'wizard', content: 'hi' }] }, 400, ['messages[0].role'])),
  app('top_p_zero', CHAT, 1, (ctx, rng) => chatWith(ctx, rng, { top_p: 0 }, 400, ['top_p'])),
  app('n_two', CHAT, 1, (ctx, rng) => chatWith(ctx, rng, { n: 2 }, 400, ['n'])),
  app('unknown_model', CHAT, 2, (ctx, rng) => chatWith(ctx, rng, { model: 'no-such-model' }, 404, ['model'])),
  app('missing_messages', CHAT, 2, (ctx) => postRaw(ctx, CHAT, JSON.stringify({ model: ctx.model }), 400, ['messages'])),
  app('missing_prompt', COMPLETIONS, 1, (ctx) => postRaw(ctx, COMPLETIONS, JSON.stringify({ max_tokens: 4 }), 400, ['prompt'])),
  app('prompt_too_long', CHAT, 2, (ctx, rng) =>
    chatWith(ctx, rng, { messages: [{ role: 'user', content: tooLongPrompt(ctx, rng) }] }, 400, ['messages'])),
  app('completion_prompt_too_long', COMPLETIONS, 1, (ctx, rng) =>
    postRaw(ctx, COMPLETIONS, JSON.stringify(completionBody(ctx, rng, { prompt: tooLongPrompt(ctx, rng) })), 400, ['prompt'])),
  // The error names the field the client sent (max_tokens, not its alias max_completion_tokens).
  app('max_tokens_over_context', CHAT, 2, (ctx, rng) =>
    chatWith(ctx, rng, { max_tokens: ctx.contextTokens }, 400, ['max_tokens'])),
  app('max_tokens_out_of_range', COMPLETIONS, 1, (ctx, rng) =>
    postRaw(ctx, COMPLETIONS, JSON.stringify(completionBody(ctx, rng, { max_tokens: 2 ** 40 })), 400, ['max_tokens'])),
  app('huge_nesting', CHAT, 1, (ctx) => postRaw(ctx, CHAT, `{"messages": ${nested(100000)}}`, 400)),
  app('invalid_utf8', CHAT, 1, (ctx) =>
    postRaw(ctx, CHAT, Buffer.concat([Buffer.from('{"messages": [{"role": "user", "content": "a'),
                                     Buffer.from([0xff, 0xfe]), Buffer.from('"}]}')]), 400)),
  http('wrong_method', CHAT, 2, (ctx) =>
    exchange(ctx, { method: 'GET', path: CHAT, onResponse: (res) => expectError(res, 405) })),
  http('wrong_path', '/v1/nope', 2, (ctx, rng) =>
    exchange(ctx, { path: '/v1/nope', body: JSON.stringify(chatBody(ctx, rng)), headers: jsonHeaders(ctx),
                    onResponse: (res) => expectError(res, 404) })),
  http('oversized_body', CHAT, 1, (ctx) =>
    postRaw(ctx, CHAT, JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(ctx.maxBodyBytes + 1024) }] }), 413)),
  http('header_too_large', CHAT, 1, (ctx, rng) =>
    postRaw(ctx, CHAT, JSON.stringify(chatBody(ctx, rng)), 431, undefined, jsonHeaders(ctx, { 'X-Pad': 'p'.repeat(20000) }))),
  http('malformed_http', '(raw)', 2, (ctx) =>
    rawExpect(ctx, ['GET /health HTTP/1.1\r\nHost localhost\r\n\r\n'], 400)),
  http('bad_content_length', COMPLETIONS, 1, (ctx) =>
    rawExpect(ctx, [`POST ${COMPLETIONS} HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n`], 400)),
];

// With --api-key: a wrong key and a missing key are 401 for generation and for /v1/models.
export const authScenarios = [
  app('bad_api_key', CHAT, 2, (ctx, rng) =>
    postRaw(ctx, CHAT, JSON.stringify(chatBody(ctx, rng)), 401, undefined, jsonHeaders(ctx, { Authorization: 'Bearer wrong-key' }))),
  app('missing_api_key', COMPLETIONS, 1, (ctx, rng) =>
    postRaw(ctx, COMPLETIONS, JSON.stringify(completionBody(ctx, rng)), 401, undefined, { 'Content-Type': 'application/json' })),
  http('bad_api_key_models', '/v1/models', 1, (ctx) =>
    exchange(ctx, { method: 'GET', path: '/v1/models', headers: { Authorization: 'Bearer wrong-key' },
                    onResponse: (res) => expectError(res, 401) })),
];
