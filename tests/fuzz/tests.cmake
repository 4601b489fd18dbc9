# The libFuzzer targets (fuzz/, docs/fuzz.md), only in a build with MP_FUZZ
# (clang): each replays its seed corpus and regression inputs, then fuzzes
# for MP_FUZZ_SECONDS.  Label "fuzz": tests/run runs just these there.
if(MP_FUZZ)
  set(MP_FUZZ_SECONDS 12 CACHE STRING "Seconds each fuzz target's ctest fuzzes")
  file(GLOB MP_FUZZ_TARGETS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/fuzz/fuzz_*.c)
  foreach(src ${MP_FUZZ_TARGETS})
    get_filename_component(name ${src} NAME_WE)
    add_test(NAME ${name} COMMAND ${CMAKE_CURRENT_LIST_DIR}/run.sh $<TARGET_FILE:${name}>
             ${CMAKE_SOURCE_DIR}/fuzz ${CMAKE_BINARY_DIR}/fuzz-work/${name} ${MP_FUZZ_SECONDS})
    set_tests_properties(${name} PROPERTIES LABELS fuzz TIMEOUT 180)
  endforeach()
endif()
