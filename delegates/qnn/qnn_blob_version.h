// Version of the QNN delegate's blob (qnn_blob.fbs Blob.version), written by the exporter and
// checked by the runtime; bumped on an incompatible change.
#pragma once

#include <cstdint>

namespace ember {
namespace qnn {
constexpr uint32_t kQnnBlobVersion = 1;
}  // namespace qnn
}  // namespace ember
