#!/usr/bin/env bash
# The prefix cache's effect on one workload: `hichat serve` on MODEL_DIR twice, with the cache (the
# default) and with --no-prefix-cache, each loaded by the same `hichat bench serve` run (same seed);
# prints both result lines and the ratios the context-engine issue asks for (multi-turn: TTFT of the
# last turn, cache on / off; shared-prefix and random: output tok/s, cache on / off). Appends the JSON
# lines, tagged with the setting, to bench/results/prefix-cache-<host>-<date>.jsonl.
# Usage: bench/prefix_cache_bench.sh MODEL_DIR DATASET [bench serve flags...] [-- serve flags...]
#   e.g. bench/prefix_cache_bench.sh models/default multi-turn --mt-num-conversations 1 --mt-num-turns 10
# HICHAT: the hichat binary (default build/tools/hichat). OFF_FLAGS / OFF_NAME: the serve flags and the
# name of the compared setting (default --no-prefix-cache / off), e.g. OFF_FLAGS="--host-kv-cache-gb 0"
# OFF_NAME=no-host-tier ON_NAME=host-tier to measure the host tier. Each line also carries the server's
# prefix-cache counters from /metrics at the end of the run (queried, hit and host-hit tokens, copies).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
model=$1 dataset=$2; shift 2
bench_flags=() serve_flags=()
while [[ $# -gt 0 ]]; do
  if [[ $1 == -- ]]; then shift; serve_flags=("$@"); break; fi
  bench_flags+=("$1"); shift
done
bin=${HICHAT:-build/tools/hichat}
mkdir -p bench/results
out=bench/results/prefix-cache-$(hostname)-$(date -u +%Y-%m-%d).jsonl
export HICHAT_COMMIT=${HICHAT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
log=$(mktemp -d)

run() {  # run SETTING [serve flags...]: one server, one bench run; prints the JSON line
  local setting=$1; shift
  "$bin" serve --model "$model" --port 0 "${serve_flags[@]}" "$@" 2> "$log/serve-$setting.err" & local pid=$!
  local port=""
  for _ in $(seq 600); do
    grep -q "ready:" "$log/serve-$setting.err" 2>/dev/null && port=$(grep -oE 'listening on https?://[^ ]+:[0-9]+' \
      "$log/serve-$setting.err" | grep -oE '[0-9]+$') && break
    kill -0 $pid 2>/dev/null || { cat "$log/serve-$setting.err" >&2; exit 1; }
    sleep 0.5
  done
  [[ -n $port ]] || { echo "serve did not get ready" >&2; kill $pid; exit 1; }
  local name; name=$(grep -oE "ready: model '[^']+'" "$log/serve-$setting.err" | sed "s/ready: model '//; s/'$//")
  local rc=0
  "$bin" bench serve --url "http://127.0.0.1:$port" --model "$name" --dataset "$dataset" "${bench_flags[@]}" \
      > "$log/bench-$setting.out" || rc=$?
  metrics_fields "http://127.0.0.1:$port/metrics" > "$log/metrics-$setting.json" || echo '{}' > "$log/metrics-$setting.json"
  kill -TERM $pid; wait $pid || true
  [[ $rc == 0 ]] || { echo "bench serve failed (exit $rc)" >&2; exit 1; }
  tail -n 1 "$log/bench-$setting.out" | sed "s/^{/{\"setting\":\"prefix-cache-$setting\",\"dataset\":\"$dataset\",\"server_metrics\":$(cat "$log/metrics-$setting.json"),/" \
      | tee -a "$out"
  grep -h "KV cache:" "$log/serve-$setting.err" | sed "s/^/$setting: /" >&2 || true
  sed '$d' "$log/bench-$setting.out" >&2
}

metrics_fields() {  # the hichat_prefix_cache_* and hichat_host_kv_* samples of a /metrics page, as JSON
  /usr/bin/env python3 - "$1" <<'PY'
import json, sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
out = {}
for line in text.splitlines():
    if line.startswith(("hichat_prefix_cache_", "hichat_host_kv_", "hichat_kv_blocks_")):
        name, value = line.rsplit(" ", 1)
        out[name.removeprefix("hichat_")] = float(value)
print(json.dumps(out, separators=(",", ":")))
PY
}

read -r -a off_flags <<< "${OFF_FLAGS:---no-prefix-cache}"
on=$(run "${ON_NAME:-on}")
off=$(run "${OFF_NAME:-off}" "${off_flags[@]}")
/usr/bin/python3 - "$on" "$off" <<'PY'
import json, sys
on, off = (json.loads(a) for a in sys.argv[1:3])
def get(j, *keys):
    for k in keys:
        if k in j: return j[k]
    return None
print(f"cached prompt share: on {on.get('cached_prompt_share')}, off {off.get('cached_prompt_share')}")
for name, j in (("on", on), ("off", off)):
    m = j.get("server_metrics", {})
    q, h = m.get("prefix_cache_queried_tokens_total"), m.get("prefix_cache_hit_tokens_total")
    if q:
        print(f"{name}: server prefix hits {h / q:.3f} of queried tokens, host-tier hits "
              f"{m.get('prefix_cache_host_hit_tokens_total', 0) / q:.3f}; blocks offloaded "
              f"{m.get('host_kv_offloaded_blocks_total', 0):.0f}, restored {m.get('host_kv_restored_blocks_total', 0):.0f}")
for key in ("output_throughput", "mean_ttft_ms", "median_ttft_ms"):
    a, b = on.get(key), off.get(key)
    if a is not None and b:
        print(f"{key}: on {a:.2f}, off {b:.2f}, on/off {a / b:.3f}")
if on.get("turns") and off.get("turns"):
    for t_on, t_off in zip(on["turns"], off["turns"]):
        a, b = get(t_on, "mean_ttft_ms"), get(t_off, "mean_ttft_ms")
        if not t_on.get("completed") or not t_off.get("completed"):
            print(f"turn {get(t_on, 'turn')}: not completed (on {t_on.get('completed')}, off {t_off.get('completed')})")
            continue
        print(f"turn {get(t_on, 'turn')}: TTFT on {a:.1f} ms, off {b:.1f} ms, on/off {a / b:.3f}, "
              f"cached share {t_on.get('cached_prompt_share')}")
PY
