# Converter throughput (MB/s of input) per format: docs/performance.md, "Converters".
add_executable(convert_bench ${CMAKE_CURRENT_SOURCE_DIR}/convert_bench.cc)
target_link_libraries(convert_bench PRIVATE cops_convert cops_test_documents
                                            benchmark::benchmark benchmark::benchmark_main)
