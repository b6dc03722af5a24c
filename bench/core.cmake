# Throughput of the detection core: raw bytes -> selected chunk hashes (docs/performance.md).
if(TARGET cops_core)
  add_executable(core_bench ${CMAKE_CURRENT_SOURCE_DIR}/core_bench.cc)
  target_link_libraries(core_bench PRIVATE cops_core benchmark::benchmark)
  target_include_directories(core_bench PRIVATE ${PROJECT_SOURCE_DIR})
endif()
