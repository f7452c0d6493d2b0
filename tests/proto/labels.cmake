# ms_onnx_test reads the exporter's bytes back with the generated
# onnx.pb-c.h, which lives in proto's build folder (the Onnx__ names stay
# with proto/ and its own test).
if(TARGET ms_onnx_test)
    target_include_directories(ms_onnx_test PRIVATE ${CMAKE_BINARY_DIR}/proto)
endif()
