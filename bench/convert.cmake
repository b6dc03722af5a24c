# Converter throughput (MB/s of input) per format: docs/performance.md, "Converters".
if(NOT TARGET cops_convert_fixtures)
  add_library(cops_convert_fixtures STATIC ${PROJECT_SOURCE_DIR}/tests/convert/fixtures.cc)
  target_include_directories(cops_convert_fixtures PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(cops_convert_fixtures PRIVATE PkgConfig::LIBZIP)
endif()
add_executable(convert_bench ${CMAKE_CURRENT_SOURCE_DIR}/convert_bench.cc)
target_link_libraries(convert_bench PRIVATE cops_convert cops_convert_fixtures
                                            benchmark::benchmark benchmark::benchmark_main)
