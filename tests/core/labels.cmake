# Golden test: OpenBLAS chooses its kernel when it loads, so the core type
# is pinned here (ENVIRONMENT replaces the list set in tests/CMakeLists.txt,
# so the build and source dirs are repeated).
set_tests_properties(ms_golden_test PROPERTIES ENVIRONMENT
    "MESHSWEEP_BUILD_DIR=${CMAKE_BINARY_DIR};MESHSWEEP_SOURCE_DIR=${CMAKE_SOURCE_DIR};OPENBLAS_CORETYPE=Haswell;OPENBLAS_L2_SIZE=512;OPENBLAS_NUM_THREADS=1")
# The backend-parametrised suite: ms_backend_suite_test runs it on the cpu
# backend (label unit, from the glob); this runs it on cuda (label cuda:
# `ctest -L cuda` on a GPU machine); it exits 77, reported as skipped with
# the reason in its output, where no CUDA device can be opened.
add_test(NAME ms_backend_suite_cuda COMMAND ms_backend_suite_test cuda
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(ms_backend_suite_cuda PROPERTIES LABELS "cuda;gpu"
    TIMEOUT 300 SKIP_RETURN_CODE 77
    ENVIRONMENT "MESHSWEEP_BUILD_DIR=${CMAKE_BINARY_DIR};MESHSWEEP_SOURCE_DIR=${CMAKE_SOURCE_DIR};OPENBLAS_NUM_THREADS=1")
