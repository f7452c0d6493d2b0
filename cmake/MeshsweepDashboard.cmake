# MeshsweepDashboard - the dashboard's assets (dashboard/), assembled in
# BUILD/dashboard/ and installed to DATADIR/meshsweep/dashboard.
#
# MESHSWEEP_DASHBOARD (default ON): with npm found, `npm ci` installs the
# plotting library pinned by dashboard/package-lock.json into
# BUILD/dashboard-npm/ (again only when the lock changes) and its
# plotly.min.js is copied to BUILD/dashboard/vendor/. Without npm the
# build still succeeds and the page says the plotting library is missing.
# Sets MESHSWEEP_DASHBOARD_BUILD_DIR and MESHSWEEP_DASHBOARD_INSTALL_DIR
# (meshsweepd's defaults; the build one is empty when the option is off).
option(MESHSWEEP_DASHBOARD "Build the dashboard's assets (npm ci)" ON)
include(GNUInstallDirs)
set(MESHSWEEP_DASHBOARD_INSTALL_DIR
    ${CMAKE_INSTALL_FULL_DATADIR}/meshsweep/dashboard)
set(MESHSWEEP_DASHBOARD_BUILD_DIR "")
find_program(MESHSWEEP_NPM npm)

# ms_npm_ci(TARGET SRC WORK) - a target (built by default) that runs `npm
# ci` for SRC's package-lock.json in WORK when the lock changes, when npm
# is found. Sets ${TARGET}_STAMP in the caller to the stamp file (empty
# without npm).
function(ms_npm_ci target src work)
    if(NOT MESHSWEEP_NPM)
        add_custom_target(${target})
        set(${target}_STAMP "" PARENT_SCOPE)
        return()
    endif()
    set(_stamp ${work}/npm-ci.stamp)
    add_custom_command(OUTPUT ${_stamp}
        COMMAND ${CMAKE_COMMAND} -DMODE=ci -DNPM=${MESHSWEEP_NPM}
            -DSRC=${src} -DWORK=${work} -DSTAMP=${_stamp}
            -P ${PROJECT_SOURCE_DIR}/cmake/MeshsweepNpm.cmake
        DEPENDS ${src}/package.json ${src}/package-lock.json
            ${PROJECT_SOURCE_DIR}/cmake/MeshsweepNpm.cmake
        COMMENT "npm ci (${src}/package-lock.json)" VERBATIM)
    add_custom_target(${target} ALL DEPENDS ${_stamp})
    set(${target}_STAMP ${_stamp} PARENT_SCOPE)
endfunction()

if(MESHSWEEP_DASHBOARD)
    set(_src ${PROJECT_SOURCE_DIR}/dashboard)
    set(_work ${PROJECT_BINARY_DIR}/dashboard-npm)
    set(MESHSWEEP_DASHBOARD_BUILD_DIR ${PROJECT_BINARY_DIR}/dashboard)
    if(NOT MESHSWEEP_NPM)
        message(STATUS "meshsweep: npm not found: the dashboard is built "
            "without its plotting library (the page says so)")
    endif()
    ms_npm_ci(ms_dashboard_npm ${_src} ${_work})
    set(_assembled ${_work}/assembled.stamp)
    add_custom_command(OUTPUT ${_assembled}
        COMMAND ${CMAKE_COMMAND} -DMODE=assemble -DSRC=${_src}
            -DWORK=${_work} -DOUT=${MESHSWEEP_DASHBOARD_BUILD_DIR}
            -DSTAMP=${_assembled}
            -P ${PROJECT_SOURCE_DIR}/cmake/MeshsweepNpm.cmake
        DEPENDS ${_src}/index.html ${_src}/app.js ${_src}/new-sweep.js ${_src}/style.css
            ${ms_dashboard_npm_STAMP}
            ${PROJECT_SOURCE_DIR}/cmake/MeshsweepNpm.cmake
        COMMENT "dashboard: assembling ${MESHSWEEP_DASHBOARD_BUILD_DIR}"
        VERBATIM)
    add_custom_target(ms_dashboard_assets ALL DEPENDS ${_assembled})
    add_dependencies(ms_dashboard_assets ms_dashboard_npm)
    install(DIRECTORY ${MESHSWEEP_DASHBOARD_BUILD_DIR}/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/meshsweep/dashboard)
endif()
