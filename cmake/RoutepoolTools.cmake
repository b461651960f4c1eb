# SPDX-License-Identifier: MIT
# cmake/RoutepoolTools.cmake - how a routepool command-line tool is installed.
#
#   rp_install_tool(<target> DESCRIPTION "<one line for the man page>")
#
# installs the tool under bin/ with a RUNPATH relative to itself, and
# generates and installs its man page (rp_add_man_page).  Every tool in
# tools/ (and the cluster tools) is declared with it.
#
# RUNPATH: "$ORIGIN/../<libdir>", the same in the build tree and installed.
# Were they different, CMake would rewrite the RUNPATH in place at install
# and, to make room, end the build tree's with an empty entry (which the
# dynamic linker reads as "the current directory"); relinking at install
# instead (CMAKE_NO_BUILTIN_CHRPATH) breaks a plain `cmake --install`.  So
# the tools are linked with their install RUNPATH, and the build tree has
# <libdir>/libroutepool.so.<soversion>, a symlink to the library (made by the
# root CMakeLists.txt), where that RUNPATH finds it.
#
#   rp_add_man_page(<target> DESCRIPTION "<one line>")
#
# runs help2man on the built tool at build time (its --help; the version is
# the project's, so the tool needs no --version for it) and installs
# <target>.1 under share/man/man1.  Without help2man it warns and skips:
# RP_MAN_PAGES says whether man pages are built (tests/install checks them
# then).
include_guard(GLOBAL)
include(GNUInstallDirs)

find_program(RP_HELP2MAN help2man)
if(RP_HELP2MAN)
  set(RP_MAN_PAGES ON)
else()
  set(RP_MAN_PAGES OFF)
  message(WARNING "help2man not found (apt-get install help2man): no man pages")
endif()

function(rp_add_man_page target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DESCRIPTION" "")
  if(NOT RP_MAN_PAGES)
    return()
  endif()
  if(NOT arg_DESCRIPTION)
    message(FATAL_ERROR "rp_add_man_page(${target}): DESCRIPTION is required")
  endif()
  set(page ${CMAKE_CURRENT_BINARY_DIR}/${target}.1)
  # ASAN_OPTIONS: a sanitized tool must not fail its --help on a leak report.
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
            ${RP_HELP2MAN} --no-info --no-discard-stderr
            --version-string=${PROJECT_VERSION} --name=${arg_DESCRIPTION}
            --section=1 --output=${page} $<TARGET_FILE:${target}>
    DEPENDS ${target}
    COMMENT "Generating man page ${target}.1 (help2man)"
    VERBATIM)
  add_custom_target(${target}-man ALL DEPENDS ${page})
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endfunction()

function(rp_install_tool target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DESCRIPTION" "")
  set_target_properties(${target} PROPERTIES
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
    BUILD_WITH_INSTALL_RPATH ON)
  add_dependencies(${target} routepool_build_libdir)
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  rp_add_man_page(${target} DESCRIPTION "${arg_DESCRIPTION}")
endfunction()
