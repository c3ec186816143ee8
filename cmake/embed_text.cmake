# embed_text(INPUT OUTPUT SYMBOL): writes OUTPUT, a C file defining `const char SYMBOL[]` with INPUT's text.
function(embed_text input output symbol)
  file(READ "${input}" text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n\"\n\"" text "${text}")
  file(WRITE "${output}" "// generated from ${input}: do not edit\nconst char ${symbol}[] =\n\"${text}\";\n")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${input}")
endfunction()
