// The exporter's backend registry: the delegates linked into a tool register themselves by
// name, their factories turn key=value options into typed partitioner options, and bad names,
// keys and values are errors that say what is accepted.
#include "exporter/partition/backend_registry.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace exporter {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(BackendRegistry, LinkedDelegatesRegisterByName) {
  std::string names;
  for (const BackendEntry* e : registered_backends()) names += std::string(e->name) + " ";
  EXPECT_EQ(names, "vulkan xnnpack ");
  for (const char* name : {"xnnpack", "vulkan"}) {
    auto p = make_partitioner(name);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ((*p)->backend_id(), name);
  }
  auto unknown = make_partitioner("npu");
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(contains(std::string(unknown.status().message()), "vulkan, xnnpack")) << unknown.status();
}

TEST(BackendRegistry, RegistrationIsOncePerName) {
  auto factory = [](const BackendOptions&) -> absl::StatusOr<std::shared_ptr<Partitioner>> {
    return absl::UnimplementedError("test backend");
  };
  EXPECT_FALSE(register_backend({"xnnpack", "a second xnnpack", "", factory}));
  EXPECT_FALSE(register_backend({nullptr, "", "", factory}));
  EXPECT_TRUE(register_backend({"test_backend", "for this test", "", factory}));
  EXPECT_EQ(make_partitioner("test_backend").status().code(), absl::StatusCode::kUnimplemented);
}

TEST(BackendRegistry, OptionsAreTypedAndChecked) {
  // Accepted: the keys each backend documents, with values of their type.
  EXPECT_TRUE(make_partitioner("xnnpack", {{"threads", "4"}, {"fp16", "1"}, {"conv_block_bytes", "0"}}).ok());
  EXPECT_TRUE(make_partitioner("vulkan", {{"allow_cpu", "true"}, {"fp16", "off"}, {"min_nodes", "3"}}).ok());
  // An unknown key lists the ones the backend takes.
  auto key = make_partitioner("xnnpack", {{"fp17", "1"}});
  ASSERT_FALSE(key.ok());
  EXPECT_TRUE(contains(std::string(key.status().message()), "threads, fp16, conv_block_bytes")) << key.status();
  // Values of the wrong kind or range.
  for (const BackendOptions& bad : std::vector<BackendOptions>{
           {{"threads", "four"}}, {{"threads", "-1"}}, {{"threads", "4x"}}, {{"fp16", "2"}}, {{"threads", ""}}}) {
    auto r = make_partitioner("xnnpack", bad);
    EXPECT_FALSE(r.ok()) << bad.begin()->first << "=" << bad.begin()->second;
  }
  EXPECT_FALSE(make_partitioner("vulkan", {{"min_nodes", "0"}}).ok());
  bool b = true;
  EXPECT_TRUE(read_bool_option("x", {}, "fp16", &b).ok());
  EXPECT_TRUE(b);  // absent keeps the default
  int64_t v = 7;
  EXPECT_TRUE(read_int_option("x", {{"n", "12"}}, "n", 0, 100, &v).ok());
  EXPECT_EQ(v, 12);
}

}  // namespace
}  // namespace exporter
}  // namespace ember
