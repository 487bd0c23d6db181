// Starts and stops `hichat serve` on a tiny fixture model for the end-to-end tests.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const BIN = process.env.HICHAT_BIN;
export const FIXTURES = process.env.HICHAT_FIXTURES_DIR;
if (!BIN || !FIXTURES) throw new Error('set HICHAT_BIN and HICHAT_FIXTURES_DIR (ctest does)');

// A model folder named "tiny": llama3 fixture weights, a byte-level tokenizer, a chat template.
export function makeModelDir() {
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hichat-api-')), 'tiny');
  fs.mkdirSync(dir);
  for (const f of ['config.json', 'model.safetensors']) fs.copyFileSync(path.join(FIXTURES, 'llama3', f), path.join(dir, f));
  fs.copyFileSync(path.join(FIXTURES, 'byte_tokenizer', 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
  fs.copyFileSync(path.join(FIXTURES, 'tiny_chat', 'tokenizer_config.json'), path.join(dir, 'tokenizer_config.json'));
  return dir;
}

// The checked-in default model (models/default): a tiny Llama with a real BPE tokenizer and chat template.
export const DEFAULT_MODEL = path.resolve(FIXTURES, '..', '..', 'models', 'default');

// Resolves once the server says it is ready; rejects if it exits first.
export async function startServer(modelDir, extraArgs = []) {
  // Each server its own in-memory session store unless the test names a file.
  const sessionDb = extraArgs.includes('--session-db') ? [] : ['--session-db', ':memory:'];
  const args = ['serve', '--model', modelDir, '--port', '0', '--threads', '2', ...sessionDb, ...extraArgs];
  const proc = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const ready = new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      stderr += d.toString();
      const m = stderr.match(/listening on (https?):\/\/[^:]+:(\d+)/);
      if (m && stderr.includes('ready:')) resolve({ scheme: m[1], port: Number(m[2]) });
    });
    proc.on('exit', (code) => reject(new Error(`hichat serve exited with ${code}: ${stderr}`)));
  });
  const { scheme, port } = await ready;
  const server = {
    proc, port, url: `${scheme}://127.0.0.1:${port}`,
    stderr: () => stderr,
    async stop() {
      if (proc.exitCode !== null) return proc.exitCode;
      const exited = new Promise((r) => proc.on('exit', (code) => r(code)));
      proc.kill('SIGTERM');
      return exited;
    },
  };
  return server;
}

export function generateCli(modelDir, prompt, maxTokens) {
  return execFileSync(BIN, ['generate', '--model', modelDir, '--prompt', prompt, '--max-tokens', String(maxTokens),
    '--temperature', '0', '--threads', '2'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

// Reads an SSE response body; returns the parsed data events (without [DONE]) and whether [DONE] came.
export async function readSse(response, onEvent = () => {}) {
  const decoder = new TextDecoder();
  let buf = '', done = false;
  const events = [];
  for await (const chunk of response.body) {
    buf += decoder.decode(chunk, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const line = buf.slice(0, cut); buf = buf.slice(cut + 2);
      if (!line.startsWith('data: ')) continue;
      if (line === 'data: [DONE]') { done = true; continue; }
      const ev = JSON.parse(line.slice(6));
      events.push(ev);
      if (onEvent(ev) === false) return { events, done };
    }
  }
  return { events, done };
}

export async function metric(url, name) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

// Polls `check` until it returns something truthy; fails after `deadlineMs`.
export async function until(what, check, deadlineMs = 120_000) {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
