# The exact planner's oracle: sekiyama2018 sec. 3.1's MIP solved with GLPK
# (tests/exact/mip.c; Debian's libglpk-dev, installed by scripts/setup-debian).
# The MIP lives in the test only, so libmemplan gains no dependency.  Without
# GLPK test_mip is built from test_mip.c alone and reports "skipped" (77).
find_path(GLPK_INCLUDE_DIR glpk.h)
find_library(GLPK_LIBRARY glpk)
if(GLPK_INCLUDE_DIR AND GLPK_LIBRARY)
  add_executable(test_mip ${CMAKE_CURRENT_LIST_DIR}/test_mip.c ${CMAKE_CURRENT_LIST_DIR}/mip.c)
  target_compile_definitions(test_mip PRIVATE MP_HAVE_GLPK)
  target_include_directories(test_mip PRIVATE ${GLPK_INCLUDE_DIR})
  target_link_libraries(test_mip PRIVATE mp_testlib ${GLPK_LIBRARY})
else()
  message(STATUS "GLPK not found: test_mip will report skipped")
  add_executable(test_mip ${CMAKE_CURRENT_LIST_DIR}/test_mip.c)
  target_link_libraries(test_mip PRIVATE mp_testlib)
endif()
add_test(NAME test_mip COMMAND test_mip ${CMAKE_SOURCE_DIR}/../shared/dsa-bench)
set_tests_properties(test_mip PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)

# The exact planner and anytime auto (tests/exact/test_exact.c).
add_executable(test_exact ${CMAKE_CURRENT_LIST_DIR}/test_exact.c)
target_link_libraries(test_exact PRIVATE mp_testlib)
add_test(NAME test_exact COMMAND test_exact WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests)

# `memplan plan --time-limit` (anytime auto) and fixed offsets through the
# real binary (tests/exact/cli.sh): output, exit codes, error texts.
add_test(NAME cli_exact COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli.sh $<TARGET_FILE:memplan>
         ${CMAKE_SOURCE_DIR}/../shared/dsa-bench)
set_tests_properties(cli_exact PROPERTIES TIMEOUT 120)

# Peak-first orders and anytime auto on large parts (tests/exact/test_peak.c);
# with ../shared/dsa-bench present, idealloc's S_1 and pangu must meet their
# max-load bound under --time-limit.
add_executable(test_peak ${CMAKE_CURRENT_LIST_DIR}/test_peak.c)
target_link_libraries(test_peak PRIVATE mp_testlib)
add_test(NAME test_peak COMMAND test_peak ${CMAKE_SOURCE_DIR}/../shared/dsa-bench)
set_tests_properties(test_peak PROPERTIES TIMEOUT 300)

# Lower bounds from windows (src/exact/bound.c) against brute force, and a
# crafted problem where they beat the max-load bound (tests/exact/test_bound.c).
add_executable(test_bound ${CMAKE_CURRENT_LIST_DIR}/test_bound.c)
target_link_libraries(test_bound PRIVATE mp_testlib)
add_test(NAME test_bound COMMAND test_bound)
set_tests_properties(test_bound PROPERTIES TIMEOUT 300)

# The default node limit of `memplan plan --strategy exact` proves G of
# MiniMalloc's hard set (737 632 nodes; the limit was 616 000 until
# 2026-11-25).  The time limit is raised so that only the node limit
# decides, the same on every machine; Release builds only (3-5 s there,
# far more under the sanitizers).  Skipped (77) without ../shared/dsa-bench.
if(CMAKE_BUILD_TYPE STREQUAL "Release" AND NOT MP_SANITIZE)
  set(MP_HARD_G ${CMAKE_SOURCE_DIR}/../shared/dsa-bench/minimalloc/challenging/G.1048576.csv)
  add_test(NAME cli_exact_default_g COMMAND sh -c
           "[ -f \"$1\" ] || exit 77; MEMPLAN_EXACT_TIME=120 \"$0\" plan --strategy exact \"$1\" | grep -x 'exact: optimal (proven), lower bound 1048576'"
           $<TARGET_FILE:memplan> ${MP_HARD_G})
  set_tests_properties(cli_exact_default_g PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 200)
endif()

# The plans stored by bench/exact/close (bench/exact/certificates/) against
# MiniMalloc's instances: checker, footprint claimed, and the max-load bound
# met where the claim is "optimal" (tests/exact/test_close.c).  Skipped (77)
# without ../shared/dsa-bench.
add_executable(test_close ${CMAKE_CURRENT_LIST_DIR}/test_close.c)
target_link_libraries(test_close PRIVATE mp_testlib)
add_test(NAME test_close COMMAND test_close ${CMAKE_SOURCE_DIR}/../shared/dsa-bench
         ${CMAKE_SOURCE_DIR}/bench/exact/certificates)
set_tests_properties(test_close PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60)
