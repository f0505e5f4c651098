# cmake -DLIBRARY=<libfpstore.so> -P exported_symbols.cmake
# The shared library exports its public API and none of lib/'s internals:
# no symbol of fpstore::internal (test hooks included) is in its dynamic
# symbol table, and the C and C++ entry points are.
find_program(NM nm REQUIRED)
find_program(CXXFILT c++filt REQUIRED)
execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY}
                COMMAND ${CXXFILT}
                OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm ${LIBRARY} failed: ${rc}")
endif()
string(REPLACE "\n" ";" lines "${symbols}")
foreach(line IN LISTS lines)
  # "address type name": the name starts at the third field.
  string(REGEX REPLACE "^[0-9a-f]* *[A-Za-z] " "" name "${line}")
  if(name MATCHES "^fpstore::internal::" OR name MATCHES "ForTesting")
    message(SEND_ERROR "${LIBRARY} exports an internal symbol: ${name}")
  endif()
endforeach()
foreach(wanted "fpstore::Store::Open(" "typeinfo for fpstore::BulkLoader" "fpstore::Status::ToString"
               "fpstore::Fingerprinter::Create(" "fpstore::PermutationPlan::Create("
               "fpstore::Version()" "fpstore_open" "fpstore_query")
  string(FIND "${symbols}" "${wanted}" at)
  if(at EQUAL -1)
    message(SEND_ERROR "${LIBRARY} does not export ${wanted}")
  endif()
endforeach()
