# MeshsweepMan - one man page: scdoc SRC (packaging/man/*.scd) into a
# gzip'd roff page OUT (gzip -9n: no name or time stamp, so the package is
# reproducible). Run as cmake -DSCDOC=... -DSRC=... -DOUT=... -P this file.
get_filename_component(_dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${_dir})
execute_process(COMMAND ${SCDOC} INPUT_FILE ${SRC} OUTPUT_FILE ${OUT}.roff
    ERROR_VARIABLE _err RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
    file(REMOVE ${OUT}.roff)
    message(FATAL_ERROR "scdoc ${SRC}: ${_err}")
endif()
execute_process(COMMAND gzip -9n -c ${OUT}.roff OUTPUT_FILE ${OUT}
    RESULT_VARIABLE _rc)
file(REMOVE ${OUT}.roff)
if(NOT _rc EQUAL 0)
    file(REMOVE ${OUT})
    message(FATAL_ERROR "gzip ${OUT}: failed")
endif()
