// Head-of-line blocking: chat templates and tokenizing run on the preprocessing pool, so an I/O thread
// answers /health, /metrics and small requests while large prompts hold the workers.
//
// What makes the order certain rather than likely: the test first sees (in /metrics, itself answered
// by an I/O thread) that the large prompts are on the workers, and only then sends the small request.
// /health never goes to the pool; a small chat goes to a worker that no large prompt holds. A large
// prompt here is several MB of chat content, templated and tokenized (seconds on a small machine;
// the context then refuses it with a 400), against a few milliseconds for the small requests.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { makeModelDir, startServer, metric } from './server_harness.mjs';

let server;
let numWorkers;

before(async () => {
  server = await startServer(makeModelDir(), ['--max-body-mb', '8']);
  numWorkers = await metric(server.url, 'hichat_preprocess_workers');
});
after(async () => { assert.equal(await server.stop(), 0); });

const LARGE_CONTENT = 'lorem ipsum dolor sit amet, '.repeat((4 << 20) / 28);  // 4 MB
const chatBody = (content, maxTokens) =>
  JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: maxTokens, temperature: 0 });

// Sends a request; `order` gets `name` when its whole response has arrived.
async function send(order, name, path, init = {}) {
  const res = await fetch(`${server.url}${path}`, init);
  const text = await res.text();
  order.push(name);
  return { status: res.status, text };
}

function sendLarge(order, name) {
  return send(order, name, '/v1/chat/completions',
    { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: chatBody(LARGE_CONTENT, 1) });
}

// Polls /metrics until the pool reports `running` busy workers and `queued` waiting tasks. Fails if a
// large prompt was answered first: then the machine tokenized it faster than we could look.
async function waitForPool(order, running, queued = 0) {
  for (;;) {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const gauge = (name) => Number(text.split('\n').find((l) => l.startsWith(name + ' ')).split(' ').pop());
    if (gauge('hichat_preprocess_tasks_running') === running && gauge('hichat_preprocess_tasks_queued') === queued) return;
    assert.equal(order.length, 0, `answered before the pool was seen with ${running} running, ${queued} queued: ${order}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function assertRefusedAsTooLong(r) {
  assert.equal(r.status, 400, r.text);
  const e = JSON.parse(r.text).error;
  assert.equal(e.param, 'messages');
  assert.match(e.message, /tokens; this model's context is/);
}

async function requestsWithCode(code) {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('hichat_requests_total{') &&
    l.includes('endpoint="/v1/chat/completions"') && l.includes(`code="${code}"`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

test('the pool has at least two workers, all idle', async () => {
  assert.ok(numWorkers >= 2, `hichat_preprocess_workers is ${numWorkers}`);
  assert.equal(await metric(server.url, 'hichat_preprocess_tasks_running'), 0);
  assert.equal(await metric(server.url, 'hichat_preprocess_tasks_queued'), 0);
});

// The pool keeps one worker for small bodies: numWorkers + 1 large prompts put numWorkers - 1 on the
// other workers and queue 2.
test('/health is answered while large prompts hold the workers and more are queued', async () => {
  const order = [];
  const larges = Array.from({ length: numWorkers + 1 }, (_, i) => sendLarge(order, `large${i}`));
  await waitForPool(order, numWorkers - 1, 2);
  const health = await send(order, 'health', '/health');
  assert.equal(health.status, 200);
  const body = JSON.parse(health.text);
  assert.equal(body.status, 'ok');
  assert.equal(typeof body.load.requests_waiting, 'number');
  assert.equal(order[0], 'health', `order of answers: ${order}`);
  for (const r of await Promise.all(larges)) assertRefusedAsTooLong(r);
  assert.equal(order.length, numWorkers + 2);
});

test('a small chat completes while large prompts hold the workers and more are queued', async () => {
  const order = [];
  const larges = Array.from({ length: numWorkers + 1 }, (_, i) => sendLarge(order, `large${i}`));
  await waitForPool(order, numWorkers - 1, 2);
  const small = await send(order, 'small', '/v1/chat/completions',
    { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: chatBody('hi', 2) });
  assert.equal(small.status, 200, small.text);
  const body = JSON.parse(small.text);
  assert.equal(body.object, 'chat.completion');
  assert.equal(body.usage.completion_tokens, 2);
  assert.equal(order[0], 'small', `order of answers: ${order}`);
  for (const r of await Promise.all(larges)) assertRefusedAsTooLong(r);
});

test('a queued request whose client left is dropped before it reaches the engine', async () => {
  const gone = await requestsWithCode(499);
  const promptTokens = await metric(server.url, 'hichat_prompt_tokens_total');
  const order = [];
  const larges = Array.from({ length: numWorkers + 1 }, (_, i) => sendLarge(order, `large${i}`));
  await waitForPool(order, numWorkers - 1, 2);
  // A short prompt in a body padded past the small lane's 64 KiB, so that it queues behind the large ones.
  const abort = new AbortController();
  const queued = fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: chatBody('hi', 2) + ' '.repeat(100 << 10),
    signal: abort.signal,
  }).catch((e) => e);
  await waitForPool(order, numWorkers - 1, 3);
  abort.abort();
  assert.equal((await queued).name, 'AbortError');
  for (const r of await Promise.all(larges)) assertRefusedAsTooLong(r);
  // A worker takes the dropped request once a large prompt is done: then it counts as 499.
  while (await requestsWithCode(499) === gone) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(await requestsWithCode(499), gone + 1);
  assert.equal(await metric(server.url, 'hichat_prompt_tokens_total'), promptTokens, 'the engine saw the request');
  assert.equal(await metric(server.url, 'hichat_preprocess_tasks_queued'), 0);
  assert.equal((await fetch(`${server.url}/health`)).status, 200);
});
