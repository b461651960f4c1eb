# SPDX-License-Identifier: MIT
# tests/cluster/routers.cmake - the cluster routers' tests (issue 19,
# tests 1-4, 7 and 9), included by tests/cluster/CMakeLists.txt.
# test_depth and test_hashing test the pure modules (lib/cluster/depth.h,
# rendezvous.h) and need no Redis; the others run redis-server and nodes.
rp_add_cluster_test(test_depth 60 INTERNAL)
rp_add_cluster_test(test_hashing 60 INTERNAL)
foreach(t test_least_used test_routers test_cscatter)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${t}.c)
    rp_add_cluster_test(${t} 150)
  endif()
endforeach()
