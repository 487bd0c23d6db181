// API keys (401), per-key quotas (429 with Retry-After) and the open endpoints.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { makeModelDir, startServer } from './server_harness.mjs';

let server;
before(async () => {
  server = await startServer(makeModelDir(), ['--api-key', 'sk-test-1', '--api-key', 'sk-test-2', '--rate-limit-rpm', '3']);
});
after(async () => { assert.equal(await server.stop(), 0); });

const body = JSON.stringify({ prompt: 'hi', max_tokens: 2 });
const call = (key, path = '/v1/completions', method = 'POST') => fetch(`${server.url}${path}`, {
  method, headers: { 'Content-Type': 'application/json', ...(key ? { Authorization: `Bearer ${key}` } : {}) },
  body: method === 'POST' ? body : undefined,
});

test('missing or wrong key -> 401 JSON error', async () => {
  for (const key of [null, 'sk-wrong']) {
    const res = await call(key);
    assert.equal(res.status, 401);
    const j = await res.json();
    assert.equal(j.error.type, 'authentication_error');
  }
  assert.equal((await call(null, '/v1/models', 'GET')).status, 401);
  assert.equal((await call(null, '/metrics', 'GET')).status, 401);
});

test('/health and the chat page need no key', async () => {
  assert.equal((await call(null, '/health', 'GET')).status, 200);
  const page = await call(null, '/', 'GET');
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<title>HiChat<\/title>/);
});

test('a valid key works; the fourth request in a minute gets 429 with Retry-After', async () => {
  for (let i = 0; i < 3; i++) assert.equal((await call('sk-test-1')).status, 200);
  const res = await call('sk-test-1');
  assert.equal(res.status, 429);
  assert.ok(Number(res.headers.get('retry-after')) >= 1);
  assert.equal((await res.json()).error.type, 'rate_limit_error');
  assert.equal((await call('sk-test-2')).status, 200, 'quotas are per key');
});

test('the server never logs a key', async () => {
  assert.ok(!server.stderr().includes('sk-test-1'));
});
