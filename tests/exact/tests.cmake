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
