// Batch webhooks end to end (issue 22 item 5): `hichat serve --webhook-url ...` against a node:http
// receiver that checks every request's Standard Webhooks signature with node:crypto. The receiver fails
// the first two deliveries (500) and accepts the rest: the event comes three times with one webhook-id
// and one body, backing off, and is accepted once; later events are accepted once each; a cancelled
// batch sends batch.cancelled; an event not yet accepted when the server stops is sent by the next
// server on the same session database, with the same id and body. A --webhook-url whose host is not in --webhook-allow stops the server
// at start with one line, and the receiver on that URL's port sees no connection.
//
// Nothing here waits for time to pass: progress is polled (batches.retrieve, the receiver's log) up to
// a generous deadline.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import OpenAI, { toFile } from 'openai';
import { BIN, makeModelDir, startServer, until } from './server_harness.mjs';

const SECRET = 'whsec_' + crypto.randomBytes(32).toString('base64');
const RETRY_BASE_MS = 50;
const JITTER = 0.2;  // RetryPolicy's default: a delay is 80-100% of base * 2^(n-1)
const FINAL = new Set(['completed', 'failed', 'cancelled', 'expired']);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hichat-webhooks-'));
const secretFile = path.join(dir, 'webhook-secret');
fs.writeFileSync(secretFile, SECRET + '\n');
let modelDir, receiver, server, client;

// The receiver's check, as the Standard Webhooks spec gives it: HMAC-SHA256 keyed with the base64 after
// "whsec_", over `${id}.${timestamp}.${body}`, equal to one "v1,<base64>" entry of webhook-signature.
function signatureValid(id, timestamp, body, header) {
  const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
  const expected = crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return (header ?? '').split(' ').some((entry) => {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') return false;
    const got = Buffer.from(entry.slice(comma + 1), 'base64');
    return got.length === expected.length && crypto.timingSafeEqual(got, expected);
  });
}

// A receiver on 127.0.0.1: records every request; a bad signature gets 401, a good one
// statusOf(number of good ones before it).
async function startReceiver(statusOf = () => 200) {
  const r = { requests: [], numConnections: 0 };
  const httpServer = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const h = req.headers;
      const valid = signatureValid(h['webhook-id'], h['webhook-timestamp'], body, h['webhook-signature']);
      const numGood = r.requests.filter((d) => d.valid).length;
      const status = !valid ? 401 : statusOf(numGood);
      r.requests.push({ at_ms: performance.now(), method: req.method, path: req.url, contentType: h['content-type'],
        id: h['webhook-id'], timestamp: h['webhook-timestamp'], signature: h['webhook-signature'], body, valid, status });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'not now');
    });
  });
  httpServer.on('connection', () => { r.numConnections += 1; });
  await new Promise((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  r.port = httpServer.address().port;
  r.url = `http://127.0.0.1:${r.port}/hook`;
  r.of = (id) => r.requests.filter((d) => d.id === id);
  r.accepted = (id) => r.of(id).filter((d) => d.status === 200);
  // The event of one batch: the webhook-id of the requests whose body names it.
  r.idFor = (batchId) => r.requests.find((d) => JSON.parse(d.body).data?.id === batchId)?.id;
  r.close = () => new Promise((resolve) => { httpServer.closeAllConnections(); httpServer.close(resolve); });
  return r;
}

const chatLine = (customId, body = {}) => JSON.stringify({ custom_id: customId, method: 'POST', url: '/v1/chat/completions',
  body: { model: 'tiny', messages: [{ role: 'user', content: `Say ${customId}.` }], max_tokens: 2, temperature: 0, ...body } });

async function createBatch(lines) {
  const file = await client.files.create({ file: await toFile(Buffer.from(lines.join('\n') + '\n'), 'in.jsonl'), purpose: 'batch' });
  return client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
}

async function finished(batchId) {
  return until(`batch ${batchId} to finish`, async () => {
    const b = await client.batches.retrieve(batchId);
    return FINAL.has(b.status) && b;
  });
}

// The accepted delivery of a batch's event (waits for it), with the event's webhook-id.
async function acceptedEvent(batchId) {
  return until(`the event of ${batchId} to be accepted`, () => {
    const id = receiver.idFor(batchId);
    return id !== undefined && receiver.accepted(id).length > 0 && id;
  });
}

function checkRequest(d, type, batchId) {
  assert.equal(d.method, 'POST');
  assert.equal(d.path, '/hook');
  assert.equal(d.contentType, 'application/json');
  assert.match(d.id, /^msg_[0-9a-f]{32}$/);
  assert.ok(d.valid, `signature of ${d.id}: ${d.signature}`);
  assert.ok(!signatureValid(d.id, d.timestamp, d.body + ' ', d.signature), 'the check fails on another body');
  assert.ok(Math.abs(Number(d.timestamp) - Date.now() / 1000) < 300, `webhook-timestamp ${d.timestamp}`);
  const payload = JSON.parse(d.body);
  assert.deepEqual(Object.keys(payload), ['object', 'id', 'type', 'created_at', 'data']);  // OpenAI's event object
  assert.equal(payload.object, 'event');
  assert.match(payload.id, /^evt_[0-9a-f]{32}$/);
  assert.equal(payload.type, type);
  assert.deepEqual(payload.data, { id: batchId });
  assert.ok(Math.abs(payload.created_at - Date.now() / 1000) < 300, `created_at ${payload.created_at}`);
}

before(async () => {
  modelDir = makeModelDir();
  receiver = await startReceiver((numGood) => (numGood < 2 ? 500 : 200));
  server = await startServer(modelDir, ['--session-db', path.join(dir, 'sessions.db'), '--batch-concurrency', '1',
    '--webhook-url', receiver.url, '--webhook-allow', '127.0.0.1', '--webhook-secret-file', secretFile,
    '--webhook-retry-base-ms', String(RETRY_BASE_MS)]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  if (server) assert.equal(await server.stop(), 0, 'graceful exit on SIGTERM');
  if (receiver) await receiver.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('batch.completed: failed twice, then accepted once, one webhook-id and one body, signed every time', async () => {
  assert.ok(fs.existsSync(path.join(dir, 'sessions-webhooks.db')), 'the state db defaults to beside the session db');
  assert.match(server.stderr(), /webhooks: batch and background response events to 1 URL\(s\), pending deliveries in .*sessions-webhooks\.db/);
  const batch = await createBatch(['a', 'b', 'c'].map((id) => chatLine(id)));
  assert.equal((await finished(batch.id)).status, 'completed');
  const id = await acceptedEvent(batch.id);

  const attempts = receiver.of(id);
  assert.equal(receiver.requests.length, 3, 'nothing else was sent');
  assert.deepEqual(attempts.map((d) => d.status), [500, 500, 200]);
  for (const d of attempts) checkRequest(d, 'batch.completed', batch.id);
  assert.equal(new Set(attempts.map((d) => d.body)).size, 1, 'the same body on every attempt');
  // Backoff: the second retry waits about twice as long as the first (jitter takes at most 20% off).
  const gap1 = attempts[1].at_ms - attempts[0].at_ms, gap2 = attempts[2].at_ms - attempts[1].at_ms;
  assert.ok(gap1 >= RETRY_BASE_MS * (1 - JITTER) - 2, `first retry after ${gap1} ms`);
  assert.ok(gap2 >= 2 * RETRY_BASE_MS * (1 - JITTER) - 2, `second retry after ${gap2} ms`);
  assert.match(server.stderr(), new RegExp(`batch ${batch.id} completed: 3 of 3 lines answered, 0 failed; webhook batch.completed ${id}`));

  // A second batch's event, accepted at its first attempt, is the barrier: the first event was not sent again.
  const second = await createBatch([chatLine('d')]);
  assert.equal((await finished(second.id)).status, 'completed');
  const secondId = await acceptedEvent(second.id);
  assert.notEqual(secondId, id);
  assert.deepEqual(receiver.of(secondId).map((d) => d.status), [200]);
  checkRequest(receiver.of(secondId)[0], 'batch.completed', second.id);
  assert.equal(receiver.of(id).length, 3);
  assert.equal(receiver.accepted(id).length, 1, 'one accepted delivery per event id');
  assert.equal(receiver.requests.length, 4);
});

test('a cancelled batch sends batch.cancelled, once', async () => {
  // Long lines one at a time, so that the cancel comes before the end; one that finished first: twice the lines.
  for (let n = 8; ; n *= 2) {
    assert.ok(n <= 256, 'every batch finished before it could be cancelled');
    const batch = await createBatch(Array.from({ length: n }, (_, i) => chatLine(`slow-${n}-${i}`, { max_tokens: 200, ignore_eos: true })));
    const cancelling = await client.batches.cancel(batch.id).catch((err) => {
      if (err.status === 409) return null;
      throw err;
    });
    const done = await finished(batch.id);
    const id = await acceptedEvent(batch.id);
    if (cancelling === null) {
      checkRequest(receiver.accepted(id)[0], 'batch.completed', batch.id);
      continue;
    }
    assert.equal(done.status, 'cancelled');
    assert.deepEqual(receiver.of(id).map((d) => d.status), [200]);
    checkRequest(receiver.of(id)[0], 'batch.cancelled', batch.id);
    break;
  }
  // Every event so far: one accepted delivery per id, and no id but the first retried.
  const ids = new Set(receiver.requests.map((d) => d.id));
  for (const id of ids) assert.equal(receiver.accepted(id).length, 1, id);
  assert.equal(receiver.requests.length, ids.size + 2);
});

test('an event pending at shutdown is delivered by the restarted server with the same id and body', async () => {
  let open = false;
  const down = await startReceiver(() => (open ? 200 : 503));
  const args = ['--session-db', path.join(dir, 'restart.db'), '--webhook-url', down.url, '--webhook-allow', '127.0.0.1',
    '--webhook-secret-file', secretFile, '--webhook-retry-base-ms', String(RETRY_BASE_MS)];
  let first = await startServer(modelDir, args), second;
  try {
    const c = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const file = await c.files.create({ file: await toFile(Buffer.from(chatLine('r') + '\n'), 'r.jsonl'), purpose: 'batch' });
    const batch = await c.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const id = await until('two refused attempts', () => down.idFor(batch.id) !== undefined && down.requests.length >= 2 &&
      down.requests[0].id);
    assert.equal(await first.stop(), 0);
    assert.match(first.stderr(), /1 webhook deliveries pending in .*restart-webhooks\.db, resumed at the next start/);
    const before = down.requests.length;
    open = true;
    second = await startServer(modelDir, args);
    await until('the resumed delivery to be accepted', () => down.accepted(id).length > 0);
    const attempts = down.of(id);
    assert.equal(attempts.length, down.requests.length, 'one event only');
    assert.ok(attempts.length > before);
    assert.deepEqual(attempts.map((d) => d.status), [...Array(attempts.length - 1).fill(503), 200]);
    for (const d of attempts) checkRequest(d, 'batch.completed', batch.id);
    assert.equal(new Set(attempts.map((d) => d.body)).size, 1, 'the same body before and after the restart');
  } finally {
    if (first) await first.stop();
    if (second) assert.equal(await second.stop(), 0);
    await down.close();
  }
});

test('a --webhook-url outside --webhook-allow: refused at start in one line, the target never contacted', async () => {
  const outside = await startReceiver();
  try {
    // "localhost" reaches the receiver (127.0.0.1) but is not the listed name: refused before any lookup.
    const target = `http://localhost:${outside.port}/hook`;
    const proc = spawn(BIN, ['serve', '--model', modelDir, '--port', '0', '--session-db', ':memory:',
      '--webhook-url', target, '--webhook-allow', '127.0.0.1', '--webhook-secret-file', secretFile],
    { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d) => { stderr += d.toString(); });
    const code = await new Promise((resolve) => proc.on('close', resolve));
    assert.equal(code, 2, stderr);
    const lines = stderr.split('\n').filter((l) => l !== '');
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0], /^hichat serve: --webhook-url: host 'localhost' is not in --webhook-allow$/);
    assert.equal(outside.numConnections, 0);
    assert.equal(outside.requests.length, 0);
  } finally {
    await outside.close();
  }
});
