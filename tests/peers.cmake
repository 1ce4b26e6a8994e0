# peers.cmake: sluice against its peers, as they are (issue 15).
# - xrate_diff (label unit, so also under ASan+UBSan): sl_limiter against the
#   real golang.org/x/time/rate on thousands of seeded random traces
#   (tests/peers/xrate_trace.go prints x/time/rate's answers,
#   tests/peers/xrate_replay.c replays them through sl_limiter);
# - test_nginx_delay (unit): the leaky queue's delay_after against nginx's
#   two-stage limit_req (burst=B delay=D), transcribed, on random traces;
# - peers_integration: CL.THROTTLE as redis-cell answers it (error texts,
#   COMMAND INFO / GETKEYS) on the real sluiced.
# - nginx_delay_integration: a live nginx's limit_req burst=B delay=D on
#   random schedules, what it refused and delayed (from its logs) replayed
#   through the leaky queue with delay_after (tests/peers/nginx_replay.c);
#   nginx_replay_cases: that judge on schedules nginx logged once
#   (tests/peers/nginx_replay_cases.txt).
sluice_unit_test(test_nginx_delay)

add_executable(xrate_replay peers/xrate_replay.c)
target_link_libraries(xrate_replay PRIVATE sluice_static m)
add_test(NAME xrate_diff
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/peers/xrate_diff.sh $<TARGET_FILE:xrate_replay>
          ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/xrate)
set_tests_properties(xrate_diff PROPERTIES LABELS unit TIMEOUT 300)

add_executable(nginx_replay peers/nginx_replay.c)
target_link_libraries(nginx_replay PRIVATE sluice_static)
# the judge on schedules nginx logged where it once erred (no nginx needed)
add_test(NAME nginx_replay_cases
  COMMAND sh -c "\"$1\" < \"$2\"" sh $<TARGET_FILE:nginx_replay>
          ${CMAKE_CURRENT_SOURCE_DIR}/peers/nginx_replay_cases.txt)
set_tests_properties(nginx_replay_cases PROPERTIES LABELS unit TIMEOUT 30)
find_program(SLUICE_NGINX nginx PATHS /usr/sbin /sbin)
if(SLUICE_NGINX)
  add_test(NAME nginx_delay_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/nginx_delay_test.py
            $<TARGET_FILE:nginx_replay> ${SLUICE_NGINX})
  set_tests_properties(nginx_delay_integration PROPERTIES LABELS integration TIMEOUT 180)
endif()


sluiced_test(peers_integration peers_test.py LABELS integration TIMEOUT 180)
