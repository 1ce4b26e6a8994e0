# What an operator watches (issue 17; docs/operations.md, "Watching sluiced"):
# GET /v1/stats, the /ui/ dashboard's files and headers, `sluice top --once`
# (tests/integration/ops_test.py), the dashboard in headless Chromium
# (ui_browser), the Prometheus rules of examples/prometheus/ (promtool) and a
# real Prometheus scraping sluiced (prometheus_integration).
if(TARGET sluiced)
  add_test(NAME ops_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/ops_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR} $<TARGET_FILE:sluice_cli>)
  set_tests_properties(ops_integration PROPERTIES LABELS "integration" TIMEOUT 300)
endif()
