# MeshsweepNpm - run as `cmake -P` by the build: the npm steps of the
# dashboard and of its browser test (docs/DASHBOARD.md "Where the assets
# come from").
#
#   -DMODE=ci -DNPM=npm -DSRC=DIR -DWORK=DIR -DSTAMP=FILE
#       copy SRC's package.json and package-lock.json into WORK and run
#       `npm ci --omit=dev --ignore-scripts --no-audit --no-fund` there
#       (the versions and hashes of the lock, nothing else); STAMP is
#       written only when it succeeded, so a failed install (no network
#       and no npm cache) is tried again at the next build. A failure
#       warns and does not fail the build: the page then says that the
#       plotting library is missing, and the browser test skips, or fails
#       where MESHSWEEP_REQUIRE_BROWSER=1 (tools/test.sh, CI).
#   -DMODE=assemble -DSRC=DIR -DWORK=DIR -DOUT=DIR -DSTAMP=FILE
#       copy SRC's index.html, app.js, new-sweep.js and style.css into OUT, and WORK's
#       node_modules/plotly.js-basic-dist-min/plotly-basic.min.js (when
#       installed) to OUT/vendor/plotly.min.js. (The basic bundle: scatter,
#       bar and pie traces, error bars, all the page draws; 1.2 MB where the
#       full one is 4.8 MB, which took the browser a second to parse.)
if(MODE STREQUAL "ci")
    file(MAKE_DIRECTORY ${WORK})
    file(COPY ${SRC}/package.json ${SRC}/package-lock.json DESTINATION ${WORK})
    file(REMOVE ${STAMP})
    execute_process(
        COMMAND ${NPM} ci --omit=dev --ignore-scripts --no-audit --no-fund
        WORKING_DIRECTORY ${WORK}
        RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
    if(_rc EQUAL 0)
        file(TOUCH ${STAMP})
    else()
        message(WARNING "meshsweep: `npm ci` in ${WORK} failed (${_rc}); "
            "its packages are missing until a later build installs them:\n"
            "${_err}")
    endif()
elseif(MODE STREQUAL "assemble")
    file(MAKE_DIRECTORY ${OUT}/vendor)
    foreach(_f index.html app.js new-sweep.js style.css)
        file(COPY_FILE ${SRC}/${_f} ${OUT}/${_f} ONLY_IF_DIFFERENT)
    endforeach()
    set(_plotly
        ${WORK}/node_modules/plotly.js-basic-dist-min/plotly-basic.min.js)
    if(EXISTS ${_plotly})
        file(COPY_FILE ${_plotly} ${OUT}/vendor/plotly.min.js ONLY_IF_DIFFERENT)
    else()
        file(REMOVE ${OUT}/vendor/plotly.min.js)
        message(STATUS "meshsweep: dashboard assembled without the plotting "
            "library (npm missing or `npm ci` failed)")
    endif()
    file(TOUCH ${STAMP})
else()
    message(FATAL_ERROR "MeshsweepNpm.cmake: MODE must be ci or assemble")
endif()
