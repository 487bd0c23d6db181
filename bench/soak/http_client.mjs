// fetch() wrappers for the soak load. Every call resolves to an outcome record, never throws:
//   ok          a complete answer that matched what this request expects
//   unexpected  a complete answer, but not the expected one (wrong status, malformed body)
//   aborted     we cut the request short on purpose
//   no_answer   the request lacked an answer: reset, timeout, empty reply or a stream cut short
//               that we did not cause
export const outcome = {
  ok: (status) => ({ outcome: 'ok', status }),
  unexpected: (status, detail) => ({ outcome: 'unexpected', status, detail }),
  aborted: (detail) => ({ outcome: 'aborted', detail }),
  noAnswer: (detail, status) => ({ outcome: 'no_answer', status, detail }),
  // Our client timeout: no answer within the bound, and the connection closed by us.
  timedOut: (ms) => ({ outcome: 'no_answer', detail: `no complete answer within ${ms} ms`, closedByClient: true }),
};

function errorDetail(e) {
  const cause = e?.cause;
  const code = cause?.code ?? e?.code ?? '';
  const message = cause?.message ?? e?.message ?? String(e);
  return `${e?.name ?? 'Error'}${code ? ` ${code}` : ''}: ${message}`.slice(0, 200);
}

// One request with a client timeout and an optional abort of our own (`abortAfterMs`, or `abort()`
// on the returned controller from inside `onResponse`). `onResponse(res, ctl)` reads the body and
// returns the outcome; a throw from it is classified here.
export async function exchange(ctx, { method = 'POST', path, body, headers = {}, abortAfterMs, onResponse }) {
  const ours = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ours.abort();
  }, ctx.timeoutMs);
  const abortTimer = abortAfterMs === undefined ? null : setTimeout(() => ours.abort(), abortAfterMs);
  const ctl = { abortedByUs: false, abort: () => { ctl.abortedByUs = true; ours.abort(); } };
  if (abortTimer) ours.signal.addEventListener('abort', () => { if (!timedOut) ctl.abortedByUs = true; });
  try {
    const res = await fetch(ctx.base + path, { method, body, headers, signal: ours.signal });
    return await onResponse(res, ctl);
  } catch (e) {
    if (timedOut) return outcome.timedOut(ctx.timeoutMs);
    if (ctl.abortedByUs) return outcome.aborted('aborted by the client');
    return outcome.noAnswer(errorDetail(e));
  } finally {
    clearTimeout(timer);
    if (abortTimer) clearTimeout(abortTimer);
  }
}

export function jsonHeaders(ctx, extra = {}) {
  const h = { 'Content-Type': 'application/json', ...extra };
  if (ctx.apiKey && !('Authorization' in extra)) h.Authorization = `Bearer ${ctx.apiKey}`;
  return h;
}

// Reads a whole body; an empty body is "no answer" (a status line alone is not a complete reply).
export async function readJson(res) {
  const text = await res.text();
  if (text.length === 0) return { empty: true };
  try {
    return { json: JSON.parse(text) };
  } catch {
    return { badJson: text.slice(0, 120) };
  }
}

// The OpenAI error shape: {"error": {"message": string, "type": string, "param", "code"}}.
export function errorShapeProblem(json) {
  const e = json?.error;
  if (typeof e !== 'object' || e === null) return 'no "error" object';
  if (typeof e.message !== 'string' || e.message.length === 0) return 'error.message missing';
  if (typeof e.type !== 'string') return 'error.type missing';
  if (!('param' in e) || !('code' in e)) return 'error.param or error.code missing';
  return null;
}

// An error request: the expected status, the error shape, and (when given) the param it names.
export async function expectError(res, status, params) {
  const body = await readJson(res);
  if (body.empty) return outcome.noAnswer('empty body', res.status);
  if (res.status !== status) return outcome.unexpected(res.status, `expected ${status}, got ${res.status}: ${JSON.stringify(body.json ?? body.badJson).slice(0, 160)}`);
  if (body.badJson !== undefined) return outcome.unexpected(res.status, `body is not JSON: ${body.badJson}`);
  const problem = errorShapeProblem(body.json);
  if (problem) return outcome.unexpected(res.status, problem);
  if (params && !params.includes(body.json.error.param)) {
    return outcome.unexpected(res.status, `param ${JSON.stringify(body.json.error.param)}, expected one of ${JSON.stringify(params)}`);
  }
  return outcome.ok(res.status);
}

// Reads an SSE body event by event. `onEvent(data)` gets each `data:` payload; it may call
// ctl.abort(). Resolves {events, done: saw [DONE], errorEvent} once the body ends.
export async function readSse(res, ctl, onEvent = () => {}) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let pending = '';
  const seen = { events: 0, done: false, errorEvent: null, afterDone: false };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = pending.indexOf('\n\n')) >= 0) {
      const event = pending.slice(0, cut);
      pending = pending.slice(cut + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (seen.done) seen.afterDone = true;
        if (data === '[DONE]') seen.done = true;
        else if (data.includes('"error"')) seen.errorEvent = data;
        seen.events += 1;
        onEvent(data);
        if (ctl.abortedByUs) {
          await reader.cancel().catch(() => {});
          return seen;
        }
      }
    }
  }
  seen.trailing = pending;
  return seen;
}
