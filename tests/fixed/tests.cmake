# Pre-placed buffers (include/memplan_fixed.h): planners around fixed
# offsets, the checker, the records' offset column and their errors.
add_executable(test_fixed ${CMAKE_CURRENT_LIST_DIR}/test_fixed.c)
target_link_libraries(test_fixed PRIVATE mp_testlib)
add_test(NAME test_fixed COMMAND test_fixed)
# Pools with fixed buffers (the records' pool column) and with a time limit.
add_executable(test_pools_fixed ${CMAKE_CURRENT_LIST_DIR}/test_pools_fixed.c)
target_link_libraries(test_pools_fixed PRIVATE mp_testlib)
add_test(NAME test_pools_fixed COMMAND test_pools_fixed)
