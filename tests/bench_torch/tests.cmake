# bench/torch's fit benchmark without running it (tests/bench_torch/
# test_bench_torch.py, a few seconds): the interleaved timing's rotation on
# tiny modules, the noise floor and the verdicts of issue 14's targets on
# hand-made records, and records from before the interleaved timing.
# Debian's /usr/bin/python3 with python3-torch; skipped (77) without them.
if(EXISTS /usr/bin/python3)
  add_test(NAME bench_torch_report
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/test_bench_torch.py)
  set_tests_properties(bench_torch_report PROPERTIES TIMEOUT 120
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()
