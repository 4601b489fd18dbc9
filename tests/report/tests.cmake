# `memplan report` (tools/cmd_report.c, tools/report_*.c) and the plan SVG
# titles through the real binary: usage errors, bad inputs, escaping of
# hostile names (tests/report/report.sh, under a second).
add_test(NAME report_cli COMMAND ${CMAKE_CURRENT_LIST_DIR}/report.sh $<TARGET_FILE:memplan>)

# The pages in headless Chromium (Debian's chromium, installed by
# scripts/setup-debian): a records file, a training graph with hostile
# names and a trace load with no script error and the expected elements;
# screenshots into the build directory (about 12 s).  Skipped (77) when
# Chromium is missing.
add_test(NAME report_browser COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/browser.py
         $<TARGET_FILE:memplan> ${CMAKE_BINARY_DIR}/report-screenshots)
set_tests_properties(report_browser PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)
