# CLI tests registered beside the scripts (the older ones are in
# tests/CMakeLists.txt).
# `memplan swap TRACE` and `memplan swap --write-trace` (issue 10 items 1, 8).
add_test(NAME cli_swap_trace COMMAND ${CMAKE_CURRENT_LIST_DIR}/swap_trace.sh $<TARGET_FILE:memplan>
         WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
set_tests_properties(cli_swap_trace PROPERTIES TIMEOUT 300)
