# SPDX-License-Identifier: MIT
# bench/cluster.cmake - the cluster benchmarks (included from
# bench/CMakeLists.txt; docs/cluster.md, "Performance").
#
#   rp-bench-streams-floor  the Redis Streams floor: pipelined XADD, one
#                           consumer with XREADGROUP COUNT 64/1024 + XACK/XDEL
#   rp-bench-cluster        routepool cluster nodes end to end (2 and 3 nodes on
#                           one Redis) and the sequential ask round trip, with
#                           same-run ratios to BullMQ and to the floor
#   rp-bench-ask-ab         the ask round trip to nodes on two library builds,
#                           interleaved (bench/ask-ab)
#
# Both need hiredis; rp-bench-cluster also the cluster library.  bench/run
# starts the redis-server they talk to and installs BullMQ with npm.
pkg_check_modules(HIREDIS IMPORTED_TARGET hiredis)
if(NOT HIREDIS_FOUND)
  message(STATUS "cluster benchmarks: hiredis not found (apt-get install libhiredis-dev); skipped")
  return()
endif()

rp_add_bench(rp-bench-streams-floor streams_floor.c cluster_redis.c cluster_redis.h)
target_link_libraries(rp-bench-streams-floor PRIVATE PkgConfig::HIREDIS)

if(TARGET routepool_cluster)
  rp_add_bench(rp-bench-cluster cluster.c cluster_redis.c cluster_redis.h)
  target_link_libraries(rp-bench-cluster PRIVATE routepool_cluster PkgConfig::HIREDIS)
  # rp-bench-ask-ab: the ask round trip to nodes of two library builds,
  # interleaved (bench/ask-ab runs it).
  rp_add_bench(rp-bench-ask-ab ask_ab.c)
  target_link_libraries(rp-bench-ask-ab PRIVATE routepool_cluster)
else()
  message(STATUS "rp-bench-cluster: the cluster library is not built; skipped")
endif()
