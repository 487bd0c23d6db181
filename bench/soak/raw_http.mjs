// Raw-socket HTTP exchanges for the soak load: bytes that fetch() cannot send (malformed requests,
// half requests, pipelining) and a small parser for the replies (Content-Length bodies only: every
// reply these requests get is a fixed-length one).
import net from 'node:net';

// Parses as many complete responses as `buf` holds. Returns [{status, headers, body}] and the rest.
export function parseResponses(buf) {
  const responses = [];
  let rest = buf;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const lines = rest.subarray(0, end).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
    if (!m) throw new Error(`not an HTTP status line: ${JSON.stringify(lines[0].slice(0, 80))}`);
    const headers = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    if (rest.length < end + 4 + length) break;
    const status = Number(m[1]);
    if (status < 200) {  // 100 Continue: an interim answer, not the response
      rest = rest.subarray(end + 4);
      continue;
    }
    responses.push({ status: Number(m[1]), headers, body: rest.subarray(end + 4, end + 4 + length).toString() });
    rest = rest.subarray(end + 4 + length);
  }
  return { responses, rest };
}

// Opens a connection, sends `parts` (strings or Buffers, one write each), then:
//   mode 'destroy': closes at once (a client that vanishes; nothing is awaited),
//   mode 'half-close': ends its side and waits for whatever the server sends until it closes,
//   mode 'read': keeps its side open and waits until `expected` responses came or the server closed.
// Resolves {responses, rest, closedByServer, error, timedOut}; never rejects.
export function rawExchange({ host, port, parts, mode = 'read', expected = 1, timeoutMs = 30000 }) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    let buf = Buffer.alloc(0);
    let settled = false;
    const finish = (extra) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      let parsed;
      try {
        parsed = parseResponses(buf);
      } catch (e) {
        parsed = { responses: [], rest: buf, parseError: e.message };
      }
      resolve({ ...parsed, closedByServer: false, error: null, timedOut: false, ...extra });
    };
    const timer = setTimeout(() => finish({ timedOut: true }), timeoutMs);
    socket.on('error', (e) => finish({ error: e.code ?? e.message }));
    socket.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (mode !== 'read') return;
      try {
        if (parseResponses(buf).responses.length >= expected) finish({});
      } catch {
        finish({});  // not HTTP: finish() reports the parse error
      }
    });
    socket.on('end', () => finish({ closedByServer: true }));
    socket.on('connect', () => {
      for (const p of parts) socket.write(p);
      if (mode === 'destroy') return finish({});
      if (mode === 'half-close') socket.end();
    });
  });
}
