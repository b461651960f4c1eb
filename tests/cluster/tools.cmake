# SPDX-License-Identifier: MIT
# tests/cluster/tools.cmake - the cluster tools' test (included from
# tests/cluster/CMakeLists.txt): tests/cluster/test_tools.sh runs rp-node and
# rp-cluster end to end against a real redis-server, with jobs_plugin.c as
# the handler plugin (and an rp-tune --job plugin: one .so for both ABIs).
if(NOT TARGET rp-node OR NOT TARGET rp-cluster)
  message(STATUS "cluster tools test: rp-node/rp-cluster not built (RP_BUILD_TOOLS, libmicrohttpd); skipped")
  return()
endif()

# The plugin is linked to libroutepool-cluster: rp-node has the library
# loaded already, but rp-tune does not, and dlopen(RTLD_NOW) of a plugin
# that only expects its host to provide rp_cluster_job_* fails there
# (docs/cluster.md says to link plugins with pkg-config --libs).
add_library(rp_test_jobs_plugin MODULE ${CMAKE_CURRENT_LIST_DIR}/jobs_plugin.c)
target_link_libraries(rp_test_jobs_plugin PRIVATE routepool_cluster routepool)
set_target_properties(rp_test_jobs_plugin PROPERTIES OUTPUT_NAME jobs PREFIX lib)

# With rp-tune built, the test also loads the plugin into rp-tune --job.
set(rp_tools_test_tune "")
if(TARGET rp-tune)
  set(rp_tools_test_tune $<TARGET_FILE:rp-tune>)
endif()
add_test(NAME cluster_tools
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_tools.sh $<TARGET_FILE:rp-node>
          $<TARGET_FILE:rp-cluster> $<TARGET_FILE:rp_test_jobs_plugin> ${rp_tools_test_tune})
# Sanitizer builds run slower and set their options as the core's tests do
# (RP_SAN_ENV, RP_TIMEOUT_SCALE from tests/CMakeLists.txt).  Serial: it
# starts a redis-server and up to five node processes of its own.
set(rp_tools_test_scale 1)
if(DEFINED RP_TIMEOUT_SCALE)
  set(rp_tools_test_scale ${RP_TIMEOUT_SCALE})
endif()
math(EXPR rp_tools_test_timeout "180 * ${rp_tools_test_scale}")
set_tests_properties(cluster_tools PROPERTIES TIMEOUT ${rp_tools_test_timeout} RUN_SERIAL TRUE
  LABELS "cluster;tool")
if(RP_SAN_ENV)
  set_tests_properties(cluster_tools PROPERTIES ENVIRONMENT "${RP_SAN_ENV}")
endif()
