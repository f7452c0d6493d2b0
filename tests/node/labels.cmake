# ms_meshsweepd_test runs the daemon binary: build it first.
if(TARGET meshsweepd AND TARGET ms_meshsweepd_test)
    add_dependencies(ms_meshsweepd_test meshsweepd)
endif()
set_tests_properties(ms_node_mesh_test PROPERTIES LABELS "integration" TIMEOUT 120)
set_tests_properties(ms_store_fragment_test PROPERTIES LABELS "unit;slow" TIMEOUT 300)
set_tests_properties(ms_node_admission_test PROPERTIES LABELS "integration" TIMEOUT 120)
# test_catch_up_100k derives 100,000 results' verdicts (50 per task, each
# derivation evaluating every canonical prefix): about 30 s in a Release
# build and 158 s under ASan + UBSan on an idle 2-core machine.
set_tests_properties(ms_store_log_test PROPERTIES TIMEOUT 300)
