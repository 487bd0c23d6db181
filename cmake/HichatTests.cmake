# hichat_discover_tests(target [gtest_discover_tests options...])
#
# Registers a GoogleTest binary's tests with ctest. The binary is listed when ctest runs (PRE_TEST),
# never during the build: listing a CUDA test binary loads cuBLASLt, which on a cold page cache takes
# longer than gtest_discover_tests' 5 s default, and a build must not fail because a disk is slow.
# The listing has no practical time limit for the same reason.
include(GoogleTest)
# Tests that start `hichat serve` without --session-db keep its default database in the build tree
# (XDG_DATA_HOME), never in the user's data folder.
function(hichat_discover_tests target)
  if(NOT "PROPERTIES" IN_LIST ARGN)
    list(APPEND ARGN PROPERTIES ENVIRONMENT "XDG_DATA_HOME=${CMAKE_BINARY_DIR}/test-data")
  endif()
  gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 3600 ${ARGN})
  hichat_record_gtest_target(${target})
endfunction()

# Every binary registered above, for the test that checks the listing itself (hichat_add_listing_test).
function(hichat_record_gtest_target target)
  set_property(GLOBAL APPEND PROPERTY HICHAT_GTEST_TARGETS ${target})
endfunction()

# suite_lists_all_tests: each GoogleTest binary lists its tests with no GPU visible and no time limit,
# and ctest registered every test each binary lists.
function(hichat_add_listing_test)
  get_property(targets GLOBAL PROPERTY HICHAT_GTEST_TARGETS)
  set(files "")
  foreach(t IN LISTS targets)
    list(APPEND files $<TARGET_FILE:${t}>)
  endforeach()
  add_test(NAME suite_lists_all_tests
           COMMAND ${PROJECT_SOURCE_DIR}/tests/suite/lists_all_tests.sh ${CMAKE_BINARY_DIR} ${files})
endfunction()
