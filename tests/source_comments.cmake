# Source comments say what the code does and why; measured figures (times, throughputs, speed ratios,
# shares of peak) and the code's history (sessions, issues, "before ... now") go to commit messages and
# perf/HISTORY.md. tests/support/check_source_comments.py scans the comments under src/ and include/ and
# names each offending file:line; its --self-test runs its rules on recorded good and bad comment lines, so
# the checker is tested on any tree. Label: docs.
set(_comments_py /usr/bin/python3)
set(_comments_chk ${CMAKE_CURRENT_SOURCE_DIR}/support/check_source_comments.py)
add_test(NAME source_comments_no_figures_or_history
         COMMAND ${_comments_py} ${_comments_chk} --root ${PROJECT_SOURCE_DIR})
add_test(NAME source_comments_checker_self_test COMMAND ${_comments_py} ${_comments_chk} --self-test)
set_tests_properties(source_comments_no_figures_or_history source_comments_checker_self_test
                     PROPERTIES LABELS docs TIMEOUT 60)
