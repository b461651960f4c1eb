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

# The tools' RUNPATH is their install one, $ORIGIN/../lib (rp_install_tool):
# give the cluster library a home there in the build tree too, as the root
# does for libroutepool (routepool_build_libdir).
add_custom_target(routepool_cluster_build_libdir
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/${CMAKE_INSTALL_LIBDIR}
  COMMAND ${CMAKE_COMMAND} -E create_symlink $<TARGET_SONAME_FILE:routepool_cluster>
          ${PROJECT_BINARY_DIR}/${CMAKE_INSTALL_LIBDIR}/$<TARGET_SONAME_FILE_NAME:routepool_cluster>
  DEPENDS routepool_cluster VERBATIM)

# rp_add_cluster_tool(<target> <sources...>): linked as the other tools
# (jemalloc first, see above), plus the cluster library and hiredis.
function(rp_add_cluster_tool target description)
  add_executable(${target} ${ARGN})
  target_include_directories(${target} PRIVATE ${JEMALLOC_INCLUDE_DIRS} ${CMAKE_CURRENT_LIST_DIR})
  target_compile_options(${target} PRIVATE ${JEMALLOC_CFLAGS_OTHER})
  target_link_libraries(${target} PRIVATE ${RP_JEMALLOC_FIRST}
    routepool_cluster routepool PkgConfig::HIREDIS Threads::Threads)
  add_dependencies(${target} routepool_cluster_build_libdir)
  rp_install_tool(${target} DESCRIPTION "${description}")
endfunction()

pkg_check_modules(MHD IMPORTED_TARGET libmicrohttpd)
if(MHD_FOUND)
  rp_add_cluster_tool(rp-node "run a routepool cluster node whose handlers come from a plugin" rp-node.c cluster_plugin.c cluster_plugin.h cluster_demo_jobs.c
    cluster_metrics.c cluster_metrics.h cluster_args.c cluster_args.h)
  target_link_libraries(rp-node PRIVATE PkgConfig::MHD ${CMAKE_DL_LIBS})
else()
  message(STATUS "rp-node: libmicrohttpd not found (apt-get install libmicrohttpd-dev); skipped")
endif()

rp_add_cluster_tool(rp-cluster "inspect and use a routepool cluster on Redis" rp-cluster.c cluster_conn.c cluster_conn.h cluster_args.c
  cluster_args.h cluster_demo.c cluster_demo.h)
