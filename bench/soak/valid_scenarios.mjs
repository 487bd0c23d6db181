// Valid requests of the soak load: chat and completions, plain and streamed, and the GETs.
// Each scenario: {kind, path, weight, reachesHandler, run(ctx, rng)} -> outcome record.
import { exchange, expectError, jsonHeaders, outcome, readJson, readSse } from './http_client.mjs';

export const CHAT = '/v1/chat/completions';
export const COMPLETIONS = '/v1/completions';
const WORDS = ('the a river stone light quiet story north garden window paper song machine early tomorrow ' +
  'because simple colour question answer number small large over under again').split(' ');

export function words(rng, n) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(WORDS[Math.floor(rng() * WORDS.length)]);
  return out.join(' ');
}

function pick(rng, list) { return list[Math.floor(rng() * list.length)]; }

// Sampling fields in the ranges HiChat accepts, varied so that every sampler path runs.
function sampling(rng) {
  const s = { temperature: pick(rng, [0, 0.7, 1.0, 1.5]) };
  if (rng() < 0.3) s.top_p = pick(rng, [0.5, 0.9, 1.0]);
  if (rng() < 0.2) s.top_k = pick(rng, [1, 5, 40]);
  if (rng() < 0.2) s.seed = Math.floor(rng() * 1e9);
  if (rng() < 0.1) s.presence_penalty = 0.5;
  if (rng() < 0.1) s.stop = [pick(rng, WORDS)];
  return s;
}

export function chatBody(ctx, rng, extra = {}) {
  const messages = [];
  if (rng() < 0.3) messages.push({ role: 'system', content: 'You are terse.' });
  for (let turn = 0, n = 1 + Math.floor(rng() * 3); turn < n; turn++) {
    if (turn > 0) messages.push({ role: 'assistant', content: words(rng, 4) });
    messages.push({ role: 'user', content: words(rng, 3 + Math.floor(rng() * 40)) });
  }
  return { model: ctx.model, messages, max_tokens: 1 + Math.floor(rng() * 32), ...sampling(rng), ...extra };
}

export function completionBody(ctx, rng, extra = {}) {
  return { model: ctx.model, prompt: words(rng, 2 + Math.floor(rng() * 40)), max_tokens: 1 + Math.floor(rng() * 32),
           ...sampling(rng), ...extra };
}

function usageProblem(usage, maxTokens) {
  if (typeof usage !== 'object' || usage === null) return 'usage missing';
  if (!(usage.prompt_tokens > 0)) return `usage.prompt_tokens ${usage.prompt_tokens}`;
  if (!(usage.completion_tokens >= 0 && usage.completion_tokens <= maxTokens)) {
    return `usage.completion_tokens ${usage.completion_tokens} (max_tokens ${maxTokens})`;
  }
  return null;
}

// A non-streamed answer: 200, the object type, one choice with text and a finish reason, usage.
export async function checkCompletion(res, body, chat) {
  const got = await readJson(res);
  if (got.empty) return outcome.noAnswer('empty body', res.status);
  if (res.status !== 200) return outcome.unexpected(res.status, JSON.stringify(got.json ?? got.badJson).slice(0, 160));
  if (got.badJson !== undefined) return outcome.unexpected(200, `body is not JSON: ${got.badJson}`);
  const j = got.json;
  const choice = j.choices?.[0];
  const text = chat ? choice?.message?.content : choice?.text;
  if (j.object !== (chat ? 'chat.completion' : 'text_completion')) return outcome.unexpected(200, `object ${j.object}`);
  if (typeof text !== 'string') return outcome.unexpected(200, 'no text in choices[0]');
  if (!['stop', 'length'].includes(choice.finish_reason)) return outcome.unexpected(200, `finish_reason ${choice.finish_reason}`);
  const problem = usageProblem(j.usage, body.max_tokens);
  return problem ? outcome.unexpected(200, problem) : outcome.ok(200);
}

// A streamed answer: 200 text/event-stream, every event JSON, a finish reason, the usage chunk when
// asked for, and [DONE] last. A stream that ends without [DONE] lacked an answer. `onEvent(n)` is
// called after the n-th event (it may abort).
export async function checkStream(res, ctl, body, onEvent) {
  if (res.status !== 200) return expectError(res, 200);
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    return outcome.unexpected(200, `content-type ${res.headers.get('content-type')}`);
  }
  let finish = null, usage = null, bad = null, count = 0;
  const seen = await readSse(res, ctl, (data) => {
    if (data === '[DONE]') return;
    try {
      const j = JSON.parse(data);
      if (j.choices?.[0]?.finish_reason) finish = j.choices[0].finish_reason;
      if (j.usage) usage = j.usage;
    } catch {
      bad = data.slice(0, 80);
    }
    onEvent?.(++count);
  });
  if (ctl.abortedByUs && !seen.done) return outcome.aborted(`after ${seen.events} events`);
  if (seen.errorEvent) return outcome.unexpected(200, `error event: ${seen.errorEvent.slice(0, 160)}`);
  if (!seen.done) return outcome.noAnswer(`stream ended after ${seen.events} events without [DONE]`, 200);
  if (bad !== null) return outcome.unexpected(200, `event is not JSON: ${bad}`);
  if (seen.afterDone) return outcome.unexpected(200, 'events after [DONE]');
  if (!['stop', 'length'].includes(finish)) return outcome.unexpected(200, `finish_reason ${finish}`);
  if (body.stream_options?.include_usage) {
    const problem = usageProblem(usage, body.max_tokens);
    if (problem) return outcome.unexpected(200, problem);
  }
  return outcome.ok(200);
}

function post(ctx, path, body, onResponse) {
  return exchange(ctx, { path, body: JSON.stringify(body), headers: jsonHeaders(ctx), onResponse });
}

async function getJson(ctx, path, check) {
  const headers = ctx.apiKey ? { Authorization: `Bearer ${ctx.apiKey}` } : {};
  return exchange(ctx, {
    method: 'GET', path, headers,
    onResponse: async (res) => {
      const text = await res.text();
      if (text.length === 0) return outcome.noAnswer('empty body', res.status);
      if (res.status !== 200) return outcome.unexpected(res.status, text.slice(0, 160));
      const problem = check(text);
      return problem ? outcome.unexpected(200, problem) : outcome.ok(200);
    },
  });
}

function jsonCheck(pred, what) {
  return (text) => {
    try {
      return pred(JSON.parse(text)) ? null : what;
    } catch {
      return `not JSON: ${text.slice(0, 80)}`;
    }
  };
}

export const validScenarios = [
  { kind: 'chat', path: CHAT, weight: 12, reachesHandler: true,
    run: (ctx, rng) => { const b = chatBody(ctx, rng); return post(ctx, CHAT, b, (res) => checkCompletion(res, b, true)); } },
  { kind: 'completion', path: COMPLETIONS, weight: 8, reachesHandler: true,
    run: (ctx, rng) => { const b = completionBody(ctx, rng); return post(ctx, COMPLETIONS, b, (res) => checkCompletion(res, b, false)); } },
  { kind: 'chat_stream_usage', path: CHAT, weight: 10, reachesHandler: true,
    run: (ctx, rng) => {
      const b = chatBody(ctx, rng, { stream: true, stream_options: { include_usage: true } });
      return post(ctx, CHAT, b, (res, ctl) => checkStream(res, ctl, b));
    } },
  { kind: 'completion_stream', path: COMPLETIONS, weight: 5, reachesHandler: true,
    run: (ctx, rng) => {
      const b = completionBody(ctx, rng, { stream: true });
      return post(ctx, COMPLETIONS, b, (res, ctl) => checkStream(res, ctl, b));
    } },
  { kind: 'chat_long_ignore_eos', path: CHAT, weight: 2, reachesHandler: true,
    run: (ctx, rng) => {
      const b = chatBody(ctx, rng, { max_tokens: 64 + Math.floor(rng() * 96), ignore_eos: true, stream: rng() < 0.5 });
      return post(ctx, CHAT, b, (res, ctl) => (b.stream ? checkStream(res, ctl, b) : checkCompletion(res, b, true)));
    } },
  // No max_tokens, a token-id prompt a few tokens short of the context: generates until the context
  // is full (finish_reason "length", completion_tokens = context - prompt).
  { kind: 'completion_fill_context', path: COMPLETIONS, weight: 1, reachesHandler: true,
    run: (ctx, rng) => {
      const room = 4 + Math.floor(rng() * 28);
      const prompt = Array.from({ length: ctx.contextTokens - room }, () => 10 + Math.floor(rng() * 1000));
      const b = { model: ctx.model, prompt, ignore_eos: true, stream: true, stream_options: { include_usage: true } };
      return post(ctx, COMPLETIONS, b, (res, ctl) => checkStream(res, ctl, { ...b, max_tokens: room }));
    } },
  { kind: 'get_health', path: '/health', weight: 5,
    run: (ctx) => getJson(ctx, '/health', jsonCheck((j) => j.status === 'ok', 'status is not ok')) },
  { kind: 'get_models', path: '/v1/models', weight: 4,
    run: (ctx) => getJson(ctx, '/v1/models', jsonCheck((j) => j.data?.[0]?.id === ctx.model, 'model not listed')) },
  { kind: 'get_metrics', path: '/metrics', weight: 3,
    run: (ctx) => getJson(ctx, '/metrics', (t) => (t.includes('hichat_kv_blocks_used') ? null : 'no hichat_kv_blocks_used')) },
];
