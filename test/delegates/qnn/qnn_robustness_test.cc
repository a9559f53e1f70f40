// Bad QNN programs and a missing or wrong library give clean errors, never crashes: a
// corrupt delegate blob, a context binary that is damaged or cut short, a blob from a newer
// exporter, and a library path that does not hold a QNN library. (The .pte fuzzer covers the
// blob's verification up to the library call; the library's own parsing is tested here on
// deterministic damage, since Qualcomm's code is not ours to fuzz.)
#include <cstring>
#include <string>
#include <vector>

#include "delegates/qnn/exporter/qnn_partitioner.h"
#include "delegates/qnn/qnn_blob_generated.h"
#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "test/delegates/qnn/qnn_test_util.h"
#include "test/exporter/pte_runner.h"
#include "test/support/repo_path.h"

namespace ember {
namespace {

// The Fashion-MNIST PT2E int8 program with everything in one QNN delegate.
const std::vector<uint8_t>& qnn_program() {
  static const std::vector<uint8_t> pte = [] {
    exporter::ExportOptions o;
    o.partitioners.push_back(std::make_shared<qnn::QnnPartitioner>());
    auto r = exporter::export_pt2_file(testing::repo_path("examples/models/fashion_cnn_int8_pt2e.pt2"), o);
    return r.ok() ? r->pte : std::vector<uint8_t>();
  }();
  return pte;
}

std::string load_error(const std::vector<uint8_t>& pte) {
  testing::PteRunner runner;
  return runner.load(pte);
}

class QnnRobustness : public ::testing::Test {
 protected:
  void SetUp() override {
    EMBER_REQUIRE_QNN();
    ASSERT_FALSE(qnn_program().empty());
    pte_ = qnn_program();
    offset_ = testing::qnn_blob_offset(pte_);
    ASSERT_GT(offset_, 0u);
    blob_ = qnn::fb::GetMutableBlob(pte_.data() + offset_);
    ASSERT_NE(blob_->context_binary(), nullptr);
    ASSERT_EQ(load_error(pte_), "");  // the undamaged program loads
  }
  std::vector<uint8_t> pte_;
  size_t offset_ = 0;
  qnn::fb::Blob* blob_ = nullptr;
};

TEST_F(QnnRobustness, DamagedContextBinaryIsRejectedByTheLibrary) {
  // The context binary's header overwritten: the library must refuse it at method load.
  auto* bin = blob_->mutable_context_binary();
  for (size_t i = 0; i < 64 && i < bin->size(); ++i) bin->Mutate(static_cast<flatbuffers::uoffset_t>(i), 0xA5);
  const std::string e = load_error(pte_);
  EXPECT_NE(e.find("qnn: the library rejected the context binary"), std::string::npos) << e;
  EXPECT_NE(e.find("re-export"), std::string::npos) << e;
}

TEST_F(QnnRobustness, TruncatedContextBinaryIsRejected) {
  // The vector's length prefix halved: the library sees a binary cut short.
  const size_t at = static_cast<size_t>(reinterpret_cast<const uint8_t*>(blob_->context_binary()) - pte_.data());
  uint32_t n = 0;
  std::memcpy(&n, pte_.data() + at, 4);
  n /= 2;
  std::memcpy(pte_.data() + at, &n, 4);
  const std::string e = load_error(pte_);
  EXPECT_NE(e.find("qnn: the library rejected the context binary"), std::string::npos) << e;
}

TEST_F(QnnRobustness, BlobFromANewerExporterIsRefused) {
  ASSERT_TRUE(blob_->mutate_version(blob_->version() + 1));
  const std::string e = load_error(pte_);
  EXPECT_NE(e.find("qnn: blob version"), std::string::npos) << e;
}

TEST_F(QnnRobustness, CorruptBlobIsRefusedBeforeTheLibrary) {
  // The root offset pointed past the end: the FlatBuffers verifier refuses the blob.
  const uint32_t bad = 0x7FFFFFF0u;
  std::memcpy(pte_.data() + offset_, &bad, 4);
  const std::string e = load_error(pte_);
  EXPECT_NE(e.find("qnn: the delegate blob is corrupt"), std::string::npos) << e;
}

TEST_F(QnnRobustness, WrongInputBindingIsAnError) {
  // A graph input described with another byte size than the tensor the call passes.
  auto* inputs = blob_->mutable_inputs();
  ASSERT_GT(inputs->size(), 0u);
  ASSERT_TRUE(inputs->GetMutableObject(0)->mutate_nbytes(inputs->Get(0)->nbytes() + 4));
  testing::PteRunner runner;
  ASSERT_EQ(runner.load(pte_), "");
  exporter::NpyArray x;
  x.dtype = ScalarType::Float32;
  x.shape = {1, 1, 28, 28};
  x.data.assign(28 * 28 * 4, 0);
  const std::string e = runner.run({x});
  EXPECT_NE(e.find("the compiled graph needs"), std::string::npos) << e;
}

}  // namespace
}  // namespace ember
