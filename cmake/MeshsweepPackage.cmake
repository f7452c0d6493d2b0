# MeshsweepPackage - what `make install` and the Debian package add to the
# two programs and the dashboard: man pages, the systemd unit, the default
# config, the docs; and the package itself (CPack DEB). docs/PACKAGING.md.
#
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr
#   cmake --build build && (cd build && cpack)   # meshsweep_VERSION_amd64.deb
#
# Man pages: packaging/man/*.scd, converted by scdoc when it is found (the
# build works without it, and then installs no man pages). The package
# needs CMAKE_INSTALL_PREFIX=/usr: the programs carry installed paths
# (the dashboard's assets), and cpack refuses any other prefix.
include(GNUInstallDirs)
set(_ms_pkg ${PROJECT_SOURCE_DIR}/packaging)

# ---- man pages -------------------------------------------------------------
find_program(MESHSWEEP_SCDOC scdoc)
set(MESHSWEEP_MAN_PAGES meshsweep.1 meshsweep-sweep.5 meshsweepd.8)
if(MESHSWEEP_SCDOC)
    set(_ms_man_outs "")
    foreach(_page IN LISTS MESHSWEEP_MAN_PAGES)
        string(REGEX MATCH "[0-9]$" _section ${_page})
        set(_src ${_ms_pkg}/man/${_page}.scd)
        set(_out ${PROJECT_BINARY_DIR}/man/${_page}.gz)
        add_custom_command(OUTPUT ${_out}
            COMMAND ${CMAKE_COMMAND} -DSCDOC=${MESHSWEEP_SCDOC} -DSRC=${_src}
                -DOUT=${_out} -P ${PROJECT_SOURCE_DIR}/cmake/MeshsweepMan.cmake
            DEPENDS ${_src} ${PROJECT_SOURCE_DIR}/cmake/MeshsweepMan.cmake
            COMMENT "scdoc: ${_page}" VERBATIM)
        list(APPEND _ms_man_outs ${_out})
        install(FILES ${_out}
            DESTINATION ${CMAKE_INSTALL_MANDIR}/man${_section})
    endforeach()
    add_custom_target(ms_man_pages ALL DEPENDS ${_ms_man_outs})
else()
    message(STATUS "meshsweep: scdoc not found: no man pages are built "
        "(apt-get install scdoc)")
endif()

# ---- the service, its config, the docs -------------------------------------
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(_ms_unit_dir /lib/systemd/system) # Debian 12's systemdsystemunitdir
else()
    set(_ms_unit_dir ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
endif()
set(MESHSWEEP_SYSTEMD_UNIT_DIR ${_ms_unit_dir} CACHE PATH
    "Where the systemd unit meshsweepd.service is installed")
set(MESHSWEEP_FULL_BINDIR ${CMAKE_INSTALL_FULL_BINDIR})
set(MESHSWEEP_FULL_DOCDIR ${CMAKE_INSTALL_FULL_DOCDIR})
set(MESHSWEEP_CONF_FILE ${CMAKE_INSTALL_FULL_SYSCONFDIR}/meshsweep/meshsweepd.conf)
configure_file(${_ms_pkg}/systemd/meshsweepd.service.in
    ${PROJECT_BINARY_DIR}/packaging/meshsweepd.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/meshsweepd.service
    DESTINATION ${MESHSWEEP_SYSTEMD_UNIT_DIR})
install(FILES ${_ms_pkg}/meshsweepd.conf
    DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/meshsweep)
file(GLOB _ms_docs ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${_ms_docs}
    ${_ms_pkg}/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB _ms_examples ${PROJECT_SOURCE_DIR}/examples/*.yaml)
install(FILES ${_ms_examples} DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# ---- the Debian package ----------------------------------------------------
set(MESHSWEEP_PACKAGE_MAINTAINER
    "meshsweep developers <meshsweep-dev@example.org>" CACHE STRING
    "Maintainer field of the Debian package")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME meshsweep)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "the meshsweep developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "peer-to-peer volunteer compute for neural-network sweeps")
set(CPACK_PACKAGE_DESCRIPTION
"meshsweep runs large hyperparameter and layer-architecture sweeps of
neural networks on a pool of ordinary machines. Every machine runs the
same daemon, meshsweepd: the nodes find each other on the local network,
share the list of work, claim tasks with leases, train the networks, check
each other's results and keep every result in their own database. There
is no broker and no central server.

This package holds the daemon (run by systemd as the meshsweep user, at
the lowest CPU and I/O priority, with a memory cap), the client
meshsweep, the web dashboard, man pages and documentation.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # meshsweep_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${MESHSWEEP_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Libraries by dpkg-shlibdeps; what it cannot see by hand: adduser and
# deb-systemd-helper run in the maintainer scripts. cuBLAS is dlopen'ed
# by the CUDA backend and comes from NVIDIA, not Debian: no relation.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, init-system-helpers")
# bubblewrap: program tasks' sandbox (node/programs/ms_sandbox); a node
# without it refuses program tasks and says why.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "dataset-fashion-mnist, bubblewrap")
# conffiles: dpkg keeps the config on remove (and an admin's edits on
# upgrade), deletes it on purge.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${_ms_pkg}/debian/conffiles
    ${_ms_pkg}/debian/postinst ${_ms_pkg}/debian/prerm
    ${_ms_pkg}/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_STRIP_FILES TRUE)
# The staging tree mirrors the installed one: /usr from CMAKE_INSTALL_PREFIX,
# /etc and /lib/systemd/system as absolute destinations.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_BINARY_DIR}/MeshsweepCPackOptions.cmake)
file(WRITE ${PROJECT_BINARY_DIR}/MeshsweepCPackOptions.cmake
"# Written by cmake/MeshsweepPackage.cmake: checks made when cpack runs.
if(NOT \"${CMAKE_INSTALL_PREFIX}\" STREQUAL \"/usr\")
    message(FATAL_ERROR \"meshsweep: the Debian package needs a build \"
        \"configured with -DCMAKE_INSTALL_PREFIX=/usr (this one has \"
        \"${CMAKE_INSTALL_PREFIX}): cmake -DCMAKE_INSTALL_PREFIX=/usr .\")
endif()
")
include(CPack)
