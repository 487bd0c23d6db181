// Background responses end to end (issue 22 item 5): `hichat serve` on the default model with
// --webhook-url to a node:http receiver that checks every request's Standard Webhooks signature (with
// node:crypto and with the openai SDK's webhooks.unwrap). Through the official openai client:
// responses.create({background: true}) answers at once, queued; responses.retrieve is polled until it
// completed, with output text, and exactly one signed response.completed arrives for it;
// responses.cancel stops a long one (cancelled, one response.cancelled; a second cancel returns it
// unchanged); refusals name the field; a background response in progress when the server is killed
// (SIGKILL) is failed by the next server on the same session database, which sends response.failed; one
// running at a graceful stop (SIGTERM) is failed by that server, which sends response.failed before it exits.
//
// Nothing waits for time to pass: progress is polled up to a generous deadline.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { DEFAULT_MODEL, startServer, until } from './server_harness.mjs';

const SECRET = 'whsec_' + crypto.randomBytes(32).toString('base64');
const FINAL = new Set(['completed', 'incomplete', 'failed', 'cancelled']);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hichat-background-'));
const secretFile = path.join(dir, 'webhook-secret');
fs.writeFileSync(secretFile, SECRET + '\n');
// Greedy decoding on the default model: this prompt ends with its end-of-sequence token after a few
// dozen tokens (completed); "Hello" runs on for about a thousand (long enough to cancel or kill).
const SHORT = 'Say hi.', LONG = 'Hello';
let receiver, server, client;

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

// Accepts every request (401 for a bad signature) and records it.
async function startReceiver() {
  const r = { requests: [] };
  const httpServer = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const h = req.headers;
      const valid = signatureValid(h['webhook-id'], h['webhook-timestamp'], body, h['webhook-signature']);
      r.requests.push({ id: h['webhook-id'], timestamp: h['webhook-timestamp'], signature: h['webhook-signature'],
        headers: { ...h }, body, payload: JSON.parse(body), valid });
      res.writeHead(valid ? 200 : 401).end();
    });
  });
  await new Promise((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${httpServer.address().port}/hook`;
  r.about = (responseId) => r.requests.filter((d) => d.payload.data?.id === responseId);
  r.close = () => new Promise((resolve) => { httpServer.closeAllConnections(); httpServer.close(resolve); });
  return r;
}

const outputText = (r) => r.output.flatMap((item) => item.content.map((c) => c.text)).join('');
const serveArgs = (db) => ['--session-db', path.join(dir, db), '--webhook-url', receiver.url, '--webhook-allow',
  '127.0.0.1', '--webhook-secret-file', secretFile, '--webhook-retry-base-ms', '50'];
const clientOf = (s) => new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0, webhookSecret: SECRET });

async function ended(c, id) {
  return until(`${id} to end`, async () => {
    const r = await c.responses.retrieve(id);
    return FINAL.has(r.status) && r;
  });
}

// The one accepted event about `responseId` (waits for it), checked as a receiver would.
async function eventAbout(responseId, type) {
  const d = await until(`${type} for ${responseId}`, () => receiver.about(responseId)[0]);
  assert.ok(d.valid, `signature of ${d.id}`);
  assert.match(d.id, /^msg_[0-9a-f]{32}$/);
  const unwrapped = await client.webhooks.unwrap(d.body, d.headers);  // the SDK's own check
  assert.equal(unwrapped.type, type);
  assert.deepEqual(Object.keys(d.payload), ['object', 'id', 'type', 'created_at', 'data']);  // OpenAI's event object
  assert.equal(d.payload.object, 'event');
  assert.match(d.payload.id, /^evt_[0-9a-f]{32}$/);
  assert.ok(Math.abs(d.payload.created_at - Date.now() / 1000) < 300, `created_at ${d.payload.created_at}`);
  assert.equal(d.payload.type, type);
  assert.deepEqual(d.payload.data, { id: responseId });
  return d;
}

before(async () => {
  receiver = await startReceiver();
  server = await startServer(DEFAULT_MODEL, serveArgs('sessions.db'));
  client = clientOf(server);
});
after(async () => {
  if (server) assert.equal(await server.stop(), 0, 'graceful exit on SIGTERM');
  if (receiver) await receiver.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('background: queued at once, polled until completed, one signed response.completed', async () => {
  assert.match(server.stderr(), /webhooks: batch and background response events to 1 URL\(s\)/);
  const r = await client.responses.create({ model: 'default', input: SHORT, background: true, temperature: 0,
    metadata: { run: 'one' } });
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.equal(r.background, true);
  assert.ok(['queued', 'in_progress'].includes(r.status), r.status);
  assert.deepEqual(r.output, []);
  assert.equal(r.usage, null);

  const done = await ended(client, r.id);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.background, true);
  assert.equal(done.error, null);
  assert.ok(outputText(done).length > 0, 'output text');
  assert.ok(done.usage.output_tokens > 0);
  assert.deepEqual(done.metadata, { run: 'one' });
  // The same turn as a foreground request would give (greedy).
  const fg = await client.responses.create({ input: SHORT, temperature: 0 });
  assert.equal(outputText(done), outputText(fg));
  // A finished background response continues like any other.
  const next = await client.responses.create({ input: 'And again.', previous_response_id: done.id, max_output_tokens: 4 });
  assert.equal(next.previous_response_id, done.id);

  await eventAbout(done.id, 'response.completed');
  assert.match(server.stderr(), new RegExp(`background response ${done.id} completed; webhook response.completed msg_`));
  // A later event is the barrier: no second event came for the first response.
  const second = await client.responses.create({ input: SHORT, background: true, temperature: 0 });
  await ended(client, second.id);
  await eventAbout(second.id, 'response.completed');
  assert.equal(receiver.about(done.id).length, 1, 'exactly one event per response');
  assert.equal(receiver.about(fg.id).length, 0, 'a foreground response sends no event');
});

test('cancel: a running background response becomes cancelled, once; cancelling again returns it unchanged', async () => {
  // A long generation, cancelled while it runs; one that ended before the cancel came: again.
  for (let attempt = 0; ; attempt += 1) {
    assert.ok(attempt < 5, 'every response ended before it could be cancelled');
    const r = await client.responses.create({ input: LONG, background: true, temperature: 0 });
    await until(`${r.id} to start`, async () => (await client.responses.retrieve(r.id)).status !== 'queued');
    const cancelled = await client.responses.cancel(r.id);
    if (cancelled.status !== 'cancelled') {
      assert.ok(FINAL.has(cancelled.status), cancelled.status);
      continue;
    }
    assert.equal(cancelled.id, r.id);
    assert.equal(cancelled.background, true);
    assert.equal((await client.responses.retrieve(r.id)).status, 'cancelled');
    await eventAbout(r.id, 'response.cancelled');
    const again = await client.responses.cancel(r.id);
    assert.equal(again.status, 'cancelled');
    assert.deepEqual(again, cancelled, 'idempotent');
    // The engine stopped it: nothing overwrites the cancelled state, no second event.
    const barrier = await client.responses.create({ input: SHORT, background: true, temperature: 0 });
    await ended(client, barrier.id);
    await eventAbout(barrier.id, 'response.completed');
    assert.equal((await client.responses.retrieve(r.id)).status, 'cancelled');
    assert.equal(receiver.about(r.id).length, 1);
    break;
  }
  // A completed one: returned unchanged, no event.
  const done = await ended(client, (await client.responses.create({ input: SHORT, background: true, temperature: 0 })).id);
  await eventAbout(done.id, 'response.completed');
  const same = await client.responses.cancel(done.id);
  assert.equal(same.status, 'completed');
  assert.equal(outputText(same), outputText(done));
  assert.equal(receiver.about(done.id).length, 1);
});

test('bad input: background with store false or stream, cancel of unknown or foreground responses', async () => {
  const rejects = (promise, status, param, code) => assert.rejects(promise, (err) => {
    assert.equal(err.status, status, String(err));
    if (param !== undefined) assert.equal(err.param, param, String(err));
    if (code !== undefined) assert.equal(err.code, code, String(err));
    return true;
  });
  await rejects(client.responses.create({ input: 'x', background: true, store: false }), 400, 'background');
  await rejects(client.responses.create({ input: 'x', background: true, stream: true }), 400, 'background', 'unsupported_field');
  await rejects(client.responses.create({ input: 'x', background: 'yes' }), 400, 'background');
  await rejects(client.responses.cancel('resp_doesnotexist0000'), 404, 'response_id');
  await rejects(client.responses.cancel('not-a-response-id'), 400, 'response_id');
  const fg = await client.responses.create({ input: 'x', max_output_tokens: 2 });
  await rejects(client.responses.cancel(fg.id), 400, 'response_id');
  // Another key's response is absent: covered by the store's owner scoping (responses.test.mjs).
});

test('a background response in progress when the server is killed is failed at the next start, with response.failed', async () => {
  let first = await startServer(DEFAULT_MODEL, serveArgs('restart.db')), second;
  try {
    const c = clientOf(first);
    const r = await c.responses.create({ input: LONG, background: true, temperature: 0 });
    const running = await until(`${r.id} in progress`, async () => {
      const got = await c.responses.retrieve(r.id);
      return got.status !== 'queued' && got;
    });
    assert.equal(running.status, 'in_progress', 'still running when killed');
    first.proc.kill('SIGKILL');
    await new Promise((resolve) => first.proc.on('exit', resolve));
    assert.equal(receiver.about(r.id).length, 0, 'a killed server sent nothing');

    second = await startServer(DEFAULT_MODEL, serveArgs('restart.db'));
    const c2 = clientOf(second);
    const failed = await c2.responses.retrieve(r.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.background, true);
    assert.equal(failed.error.code, 'server_error');
    assert.match(failed.error.message, /server stopped/);
    await eventAbout(r.id, 'response.failed');
    const cancelled = await c2.responses.cancel(r.id);
    assert.equal(cancelled.status, 'failed', 'an ended response is returned unchanged');
  } finally {
    if (first.proc.exitCode === null && first.proc.signalCode === null) first.proc.kill('SIGKILL');
    if (second) assert.equal(await second.stop(), 0);
  }
});

test('a graceful stop fails the background responses still running and sends response.failed', async () => {
  const s = await startServer(DEFAULT_MODEL, serveArgs('graceful.db'));
  let again;
  try {
    const c = clientOf(s);
    const r = await c.responses.create({ input: LONG, background: true, temperature: 0 });
    await until(`${r.id} in progress`, async () => (await c.responses.retrieve(r.id)).status === 'in_progress');
    assert.equal(await s.stop(), 0, 'graceful exit on SIGTERM');
    assert.match(s.stderr(), new RegExp(`background response ${r.id} failed; webhook response.failed msg_`));
    // Queued before the sender stopped: sent then, or (still pending in the state db) by the next start.
    again = await startServer(DEFAULT_MODEL, serveArgs('graceful.db'));
    await eventAbout(r.id, 'response.failed');
    const failed = await clientOf(again).responses.retrieve(r.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error.code, 'server_shutting_down');
    // The first delivery may be in flight when the sender stops: then the next start sends it again, with
    // the same webhook-id and body (at least once). It is never a second event.
    const ids = new Set(receiver.about(r.id).map((d) => d.id));
    assert.equal(ids.size, 1, 'not failed again by the next start');
    assert.equal(new Set(receiver.about(r.id).map((d) => d.body)).size, 1);
  } finally {
    await s.stop();
    if (again) assert.equal(await again.stop(), 0);
  }
});
