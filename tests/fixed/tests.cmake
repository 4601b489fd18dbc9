# Pre-placed buffers (include/memplan_fixed.h): planners around fixed
# offsets, the checker, the records' offset column and their errors.
add_executable(test_fixed ${CMAKE_CURRENT_LIST_DIR}/test_fixed.c)
target_link_libraries(test_fixed PRIVATE mp_testlib)
add_test(NAME test_fixed COMMAND test_fixed)
# Pools with fixed buffers (the records' pool column) and with a time limit.
add_executable(test_pools_fixed ${CMAKE_CURRENT_LIST_DIR}/test_pools_fixed.c)
target_link_libraries(test_pools_fixed PRIVATE mp_testlib)
add_test(NAME test_pools_fixed COMMAND test_pools_fixed)
# Anytime auto (--time-limit) and pools with a time limit around fixed
# buffers: checked plans, bounds against a brute-force oracle.
add_executable(test_anytime_fixed ${CMAKE_CURRENT_LIST_DIR}/test_anytime_fixed.c)
target_link_libraries(test_anytime_fixed PRIVATE mp_testlib)
add_test(NAME test_anytime_fixed COMMAND test_anytime_fixed)
# `memplan plan --time-limit` on records with fixed offsets, through the binary.
add_test(NAME cli_anytime_fixed COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli_anytime_fixed.sh
         $<TARGET_FILE:memplan> ${CMAKE_SOURCE_DIR}/../shared/dsa-bench)
set_tests_properties(cli_anytime_fixed PROPERTIES TIMEOUT 60)
