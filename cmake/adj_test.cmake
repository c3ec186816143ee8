# adj_test(NAME SOURCES ... [LIBS ...] [LABELS ...] [ARGS ...])
# One executable per test, registered with ctest. GPU tests return 77 without a device (skipped).
function(adj_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:C>:${ADJ_C_FLAGS}>)
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS "${T_LABELS}"
                       ENVIRONMENT "ADJOINT_ASSETS=$ENV{ADJOINT_ASSETS}")
endfunction()
