# SPDX-License-Identifier: MIT
# tools/cluster.cmake - the cluster tools (included from tools/CMakeLists.txt;
# docs/cluster.md):
#
#   rp-node     one cluster node; handlers from a plugin (routepool/plugin.h),
#               Prometheus /metrics over libmicrohttpd
#   rp-cluster  status | submit | ask | dead list|retry|drop | demo
#
# Built when the cluster library is (hiredis found).  libmicrohttpd is
# required for rp-node (Debian libmicrohttpd-dev); without it rp-node is
# skipped with a message, rp-cluster still builds.
if(NOT TARGET routepool_cluster)
  message(STATUS "cluster tools: the cluster library is not built; rp-node and rp-cluster skipped")
  return()
endif()
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)

# rp_add_cluster_tool(<target> <sources...>): linked as the other tools
# (jemalloc first, see above), plus the cluster library and hiredis.
function(rp_add_cluster_tool target)
  add_executable(${target} ${ARGN})
  target_include_directories(${target} PRIVATE ${JEMALLOC_INCLUDE_DIRS} ${CMAKE_CURRENT_LIST_DIR})
  target_compile_options(${target} PRIVATE ${JEMALLOC_CFLAGS_OTHER})
  target_link_libraries(${target} PRIVATE ${JEMALLOC_LINK_LIBRARIES} ${JEMALLOC_LDFLAGS_OTHER}
    routepool_cluster routepool PkgConfig::HIREDIS Threads::Threads)
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()

pkg_check_modules(MHD IMPORTED_TARGET libmicrohttpd)
if(MHD_FOUND)
  rp_add_cluster_tool(rp-node rp-node.c cluster_plugin.c cluster_plugin.h cluster_demo_jobs.c
    cluster_metrics.c cluster_metrics.h cluster_args.c cluster_args.h)
  target_link_libraries(rp-node PRIVATE PkgConfig::MHD ${CMAKE_DL_LIBS})
else()
  message(STATUS "rp-node: libmicrohttpd not found (apt-get install libmicrohttpd-dev); skipped")
endif()

rp_add_cluster_tool(rp-cluster rp-cluster.c cluster_conn.c cluster_conn.h cluster_args.c
  cluster_args.h cluster_demo.c cluster_demo.h)
