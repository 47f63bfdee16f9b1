# Fine-tuning, eval and predict for every task family on a tiny model, and the task data errors
# (tests/tasks/tasks_e2e.sh; real data from ../shared/data).
get_filename_component(TASKS_E2E_DATA ${CMAKE_SOURCE_DIR}/../shared/data ABSOLUTE)
add_test(NAME tasks_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tasks/tasks_e2e.sh
         $<TARGET_FILE:bertrt_cli> ${TASKS_E2E_DATA})
set_tests_properties(tasks_e2e PROPERTIES TIMEOUT 900 LABELS "e2e;long" COST 52)
