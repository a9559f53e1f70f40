# Turns exporter/ops/aten_schemas.txt (first line "# torch VERSION: ...", then one schema per
# line) into the C++ table behind generated_aten_schema_strings() (exporter/ops/op_schemas.h).
NR == 1 {
  if ($1 != "#" || $2 != "torch") { print "aten_schemas.txt: first line must be '# torch VERSION: ...'" > "/dev/stderr"; exit 1 }
  version = $3; sub(/:$/, "", version)
  print "// Generated from exporter/ops/aten_schemas.txt by aten_schemas_to_cc.awk. Do not edit."
  print "#include \"exporter/ops/op_schemas.h\""
  print "namespace ember {"
  print "namespace exporter {"
  print "const char* aten_schemas_torch_version() { return \"" version "\"; }"
  print "const std::vector<const char*>& generated_aten_schema_strings() {"
  print "  static const std::vector<const char*> kSchemas = {"
  next
}
/^#/ || /^$/ { next }
{
  if (index($0, ")S\"") > 0) { print "schema contains )S\": " $0 > "/dev/stderr"; exit 1 }
  print "      R\"S(" $0 ")S\","
}
END {
  print "  };"
  print "  return kSchemas;"
  print "}"
  print "}  // namespace exporter"
  print "}  // namespace ember"
}
