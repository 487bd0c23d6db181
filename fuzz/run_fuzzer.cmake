# Runs one fuzz target on a scratch copy of its seed corpus (ctest: fuzz_<name>).
#   cmake -DFUZZER=<binary> -DCORPUS=<seed dir> -DDICT=<file or empty> -DWORK=<scratch dir> -DRUNS=<n> -DSEED=<s> -P run_fuzzer.cmake
# The seeds (also the committed crash inputs) run first, then RUNS new inputs drawn from SEED: the same
# inputs on every run of a commit. Any crash, sanitizer report, leak, out-of-memory (> 2 GB) or slow
# input (> 30 s) makes libFuzzer exit non-zero and fails the test.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
file(COPY ${CORPUS}/ DESTINATION ${WORK}/corpus)
set(args ${WORK}/corpus -runs=${RUNS} -seed=${SEED} -rss_limit_mb=2048 -timeout=30
         -print_final_stats=1 -artifact_prefix=${WORK}/)
if(DICT)
  list(APPEND args -dict=${DICT})
endif()
execute_process(COMMAND ${FUZZER} ${args} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (exit ${rc}); the input is in ${WORK}/ (crash-*, leak-*, oom-*, timeout-*)")
endif()
