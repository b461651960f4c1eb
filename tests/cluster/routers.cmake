# SPDX-License-Identifier: MIT
# tests/cluster/routers.cmake - the cluster routers' tests (issue 19,
# tests 1-4, 7 and 9), included by tests/cluster/CMakeLists.txt.
# test_depth and test_hashing test the pure modules (lib/cluster/depth.h,
# rendezvous.h) and need no Redis; the others run redis-server and nodes.
rp_add_cluster_test(test_depth 60 INTERNAL)
rp_add_cluster_test(test_hashing 60 INTERNAL)
foreach(t test_least_used test_routers test_router_kinds test_cscatter)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${t}.c)
    rp_add_cluster_test(${t} 150)
  endif()
endforeach()

# The routers under concurrency: a plain program (ThreadSanitizer can run
# it; Criterion binaries cannot), registered here for the plain and ASan
# builds.
add_executable(stress_routers stress_routers.c)
target_link_libraries(stress_routers PRIVATE routepool_cluster routepool cluster_harness
  Threads::Threads)
add_test(NAME cluster_stress_routers COMMAND stress_routers)
math(EXPR t "120 * ${RP_TIMEOUT_SCALE}")
set_tests_properties(cluster_stress_routers PROPERTIES TIMEOUT ${t} RUN_SERIAL TRUE
  LABELS cluster)
if(RP_SAN_ENV)
  set_tests_properties(cluster_stress_routers PROPERTIES ENVIRONMENT "${RP_SAN_ENV}")
endif()
