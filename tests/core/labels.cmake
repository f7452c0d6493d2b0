# Golden test: OpenBLAS chooses its kernel when it loads, so the core type
# is pinned here (ENVIRONMENT replaces the list set in tests/CMakeLists.txt,
# so the build and source dirs are repeated).
set_tests_properties(ms_golden_test PROPERTIES ENVIRONMENT
    "MESHSWEEP_BUILD_DIR=${CMAKE_BINARY_DIR};MESHSWEEP_SOURCE_DIR=${CMAKE_SOURCE_DIR};OPENBLAS_CORETYPE=Haswell;OPENBLAS_L2_SIZE=512;OPENBLAS_NUM_THREADS=1")
