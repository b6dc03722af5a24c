# Storage benchmark (docs/performance.md). Needs /usr/share/dict/words (wamerican).
if(TARGET cops_core)
  add_executable(storage_bench ${CMAKE_CURRENT_LIST_DIR}/storage_bench.cc)
  target_link_libraries(storage_bench PRIVATE cops_storage benchmark::benchmark)
  target_include_directories(storage_bench PRIVATE ${PROJECT_SOURCE_DIR})
endif()
