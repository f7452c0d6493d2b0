# MeshsweepHelpers - small functions shared by every CMakeLists.txt

# ms_module(NAME DIR) - one static library per folder, from every .c in it
# (and in its cpu/ subfolder for core). Public headers live next to the
# sources; the folder is on the include path of every dependent.
function(ms_module name)
    cmake_parse_arguments(M "" "" "SOURCES;LIBS" ${ARGN})
    if(NOT M_SOURCES)
        # A module with no sources yet still builds (an empty archive).
        set(_empty ${CMAKE_CURRENT_BINARY_DIR}/${name}_empty.c)
        file(WRITE ${_empty} "typedef int ${name}_empty_t;\n")
        set(M_SOURCES ${_empty})
    endif()
    add_library(${name} STATIC ${M_SOURCES})
    target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${M_LIBS})
endfunction()

# ms_test(NAME LABELS <labels> [LIBS libs] [TIMEOUT s] [SOURCES extra])
# Builds NAME.c in the current folder into a test executable, links the
# given module libraries and cmocka, and registers it with ctest.
# A test that returns 77 is skipped (no device, no privilege).
function(ms_test name)
    cmake_parse_arguments(T "" "TIMEOUT" "LABELS;LIBS;SOURCES" ${ARGN})
    if(NOT T_TIMEOUT)
        set(T_TIMEOUT 120)
    endif()
    add_executable(${name} ${name}.c ${T_SOURCES})
    target_link_libraries(${name} PRIVATE ${T_LIBS} PkgConfig::CMOCKA)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES
        LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77
        ENVIRONMENT "MESHSWEEP_BUILD_DIR=${CMAKE_BINARY_DIR};MESHSWEEP_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endfunction()
