#!/usr/bin/env bash
# Head-of-line blocking: /health and a small chat while large prompts are being tokenized.
# Starts `hichat serve` on the tiny fixture model (a byte-level BPE tokenizer and a chat template),
# sends NUM_LARGE chat requests of LARGE_MB MB each at once (each on its own connection; the model's
# context refuses them with a 400 after they are templated and tokenized, so all their cost is
# preprocessing), then, once their bodies are sent (+ 1 s), probes GET /health every 20 ms and sends
# one small chat (max_tokens 4). Prints the large requests' times, the /health latencies seen while at least
# one large request was unanswered (max and median), and the small chat's latency. Goal: /health
# under 100 ms.
# Usage: bench/head_of_line.sh [BUILD_DIR] (env: NUM_LARGE=4 LARGE_MB=8 PORT=8198 SERVE_FLAGS=...)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=$build/tools/hichat
num_large=${NUM_LARGE:-4}
large_mb=${LARGE_MB:-8}
port=${PORT:-8198}
model=$(mktemp -d)/tiny
mkdir -p "$model"
cp tests/fixtures/llama3/{config.json,model.safetensors} tests/fixtures/byte_tokenizer/tokenizer.json \
   tests/fixtures/tiny_chat/tokenizer_config.json "$model"/
log=$(mktemp)
# shellcheck disable=SC2086  # SERVE_FLAGS is a list of flags
"$bin" serve --model "$model" --port "$port" --max-body-mb $((large_mb + 1)) ${SERVE_FLAGS:-} 2> "$log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
until grep -q "ready:" "$log"; do
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.2
done
[[ -n ${VERBOSE:-} ]] && echo "server log: $log"
echo "== $(git rev-parse --short HEAD), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $num_large x $large_mb MB"
/usr/bin/python3 - "$port" "$num_large" "$large_mb" <<'EOF'
import http.client, json, statistics, sys, threading, time

port, num_large, large_mb = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

def request(method, path, body=None, sent=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.monotonic()
    conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
    if sent: sent.set()  # the whole body is in the kernel's hands
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data, time.monotonic() - t0

def chat(content, max_tokens):
    return json.dumps({"messages": [{"role": "user", "content": content}], "max_tokens": max_tokens,
                       "temperature": 0}).encode()

large_body = chat("lorem ipsum dolor sit amet, " * (large_mb * 1024 * 1024 // 28 - 4), 4)
large = [None] * num_large
sent = [threading.Event() for _ in range(num_large)]
def send_large(i):
    large[i] = request("POST", "/v1/chat/completions", large_body, sent[i])

start = time.monotonic()
threads = [threading.Thread(target=send_large, args=(i,)) for i in range(num_large)]
for t in threads: t.start()
for e in sent: e.wait()
all_sent = time.monotonic() - start
time.sleep(1.0)  # the server reads the last bytes
small = {}
def send_small():
    small["result"] = request("POST", "/v1/chat/completions", chat("hi", 4))
small_thread = threading.Thread(target=send_small)
small_thread.start()
health = []  # (sent at, seconds) of probes answered while a large request was unanswered
while any(r is None for r in large):
    sent_at = time.monotonic() - start
    status, _, seconds = request("GET", "/health")
    if any(r is None for r in large):
        health.append((sent_at, seconds))
    time.sleep(0.02)
for t in threads: t.join()
small_thread.join()
ms = lambda s: s * 1e3
print("large: status %s, %.0f-%.0f ms (all bodies sent after %.0f ms)" % (
    sorted({r[0] for r in large}), ms(min(r[2] for r in large)), ms(max(r[2] for r in large)), ms(all_sent)))
if health:
    worst = max(health, key=lambda h: h[1])
    print("/health under load: %d probes, max %.1f ms (sent at %.2f s), median %.1f ms" %
          (len(health), ms(worst[1]), worst[0], ms(statistics.median(h[1] for h in health))))
else:
    print("/health under load: no probe answered before the large requests finished")
if "VERBOSE" in __import__("os").environ:
    print("slow probes (sent at s, ms):", [(round(a, 2), round(ms(b))) for a, b in health if b > 0.05])
    print("large done at s:", sorted(round(r[2], 2) for r in large))
s_status, _, s_seconds = small["result"]
print("small chat: status %d, %.0f ms" % (s_status, ms(s_seconds)))
EOF
