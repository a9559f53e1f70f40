// The QNN runtime backend, registered as "qnn" when linked (alwayslink).
//
// init: checks the blob (qnn_blob.fbs: FlatBuffers verifier, version, the core API major it
// was compiled for), opens the QNN library (QnnLibrary: cache, EMBER_QNN_LIBRARY), creates a
// context from the stored context binary and retrieves its graph. It never compiles: a binary
// the library rejects (corrupt, truncated, compiled for another SoC or library) fails init with
// the library's message. execute: binds the call's tensors in place to the graph's inputs and
// outputs (checked against the recorded dtypes and byte sizes) and runs graphExecute; no heap
// allocation and no compilation per call.
//
// Availability: is_available() is false when the library cannot be loaded; loading a program
// with a QNN delegate then fails naming the fix (./setup.sh or EMBER_QNN_LIBRARY).
//
// Threading: a handle (one delegate of one method) is used by one thread at a time, like its
// Method; QNN contexts of different handles are independent.
#pragma once

#include "runtime/backend/backend.h"

namespace ember {
namespace qnn {

Backend& qnn_backend();

}  // namespace qnn
}  // namespace ember
