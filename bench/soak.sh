#!/usr/bin/env bash
# Soak benchmark of `hichat serve` (a benchmark, not a CI test): starts the server on a model folder
# and a free port, runs bench/soak_load.mjs against it (fixed concurrency, mixed valid, streamed,
# invalid and aborted requests, RSS and /metrics sampled; at the end it sends SIGTERM with streams
# open), then checks that the server drained and exited 0. Prints the load's table and one line per
# check; exits 1 if any check failed.
# Usage: bench/soak.sh [--build DIR] [--model DIR] [--duration-s 600] [--concurrency 16] [--api-key KEY]
#                      [--seed N] [-- extra hichat serve flags]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build model=models/default duration=600 concurrency=16 api_key="" seed=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --duration-s) duration=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --api-key) api_key=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bin=$build/tools/hichat
[[ -x $bin ]] || { echo "soak.sh: no hichat binary at $bin (build it, or pass --build DIR)" >&2; exit 2; }
[[ -d $model ]] || { echo "soak.sh: model folder '$model' does not exist" >&2; exit 2; }

log=$(mktemp /tmp/hichat_soak.XXXXXX.log)
# Small body limit so that the oversized-body requests stay cheap; short read timeouts so that the
# half requests that wait get their 408 or close quickly.
serve_flags=(--model "$model" --port 0 --max-body-mb 1 --header-timeout-s 5 --body-timeout-s 5)
[[ -n $api_key ]] && serve_flags+=(--api-key "$api_key")
"$bin" serve "${serve_flags[@]}" "$@" 2> "$log" &
pid=$!
stop_server() { kill -TERM "$pid" 2> /dev/null || true; }
trap stop_server EXIT

port=""
for _ in $(seq 600); do  # the tiny model loads in well under a second; big ones take longer
  grep -q 'ready:' "$log" && port=$(sed -n 's/.*listening on https\{0,1\}:\/\/[^ ]*:\([0-9]*\) .*/\1/p' "$log" | head -1)
  [[ -n $port ]] && break
  kill -0 "$pid" 2> /dev/null || { echo "soak.sh: hichat serve exited before it was ready:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.5
done
[[ -n $port ]] || { echo "soak.sh: hichat serve not ready after 300 s" >&2; cat "$log" >&2; exit 1; }
echo "soak.sh: hichat serve pid $pid on port $port ($model); load for ${duration}s at concurrency $concurrency"

load_flags=(--url "http://127.0.0.1:$port" --server-pid "$pid" --duration-s "$duration"
            --concurrency "$concurrency" --max-body-mb 1 --seed "$seed")
[[ -n $api_key ]] && load_flags+=(--api-key "$api_key")
load_rc=0
node bench/soak_load.mjs "${load_flags[@]}" || load_rc=$?

# Graceful stop (the load sent SIGTERM already, unless it failed early): the server must drain and
# exit 0 within its drain time (30 s) + slack.
kill -TERM "$pid" 2> /dev/null || true
trap - EXIT
exit_rc=""
for _ in $(seq 90); do
  kill -0 "$pid" 2> /dev/null || { wait "$pid" && exit_rc=0 || exit_rc=$?; break; }
  sleep 0.5
done
if [[ -z $exit_rc ]]; then
  echo "  FAIL  server stopped gracefully on SIGTERM: still running after 45 s; killing it"
  kill -KILL "$pid"; wait "$pid" || true
  exit_rc=killed
elif [[ $exit_rc == 0 ]] && grep -q 'stopped' "$log"; then
  echo "  PASS  server stopped gracefully on SIGTERM: exit 0"
else
  echo "  FAIL  server stopped gracefully on SIGTERM: exit $exit_rc; last lines of $log:"
  tail -5 "$log" | sed 's/^/        /'
fi
if [[ $load_rc -ne 0 || $exit_rc != 0 ]]; then
  echo "soak: FAIL (server log: $log)"
  exit 1
fi
rm -f "$log"
echo "soak: PASS"
