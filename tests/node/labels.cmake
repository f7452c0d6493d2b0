# ms_meshsweepd_test runs the daemon binary: build it first.
if(TARGET meshsweepd AND TARGET ms_meshsweepd_test)
    add_dependencies(ms_meshsweepd_test meshsweepd)
endif()
set_tests_properties(ms_node_mesh_test PROPERTIES LABELS "integration" TIMEOUT 120)
set_tests_properties(ms_store_fragment_test PROPERTIES LABELS "unit;slow" TIMEOUT 300)
set_tests_properties(ms_node_admission_test PROPERTIES LABELS "integration" TIMEOUT 120)
