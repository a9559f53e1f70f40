// Shared by the QNN delegate's tests: skipping cleanly when Qualcomm's library is absent
// (./setup.sh installs it; test.sh passes its path as EMBER_QNN_LIBRARY), and comparing a QNN
// program's outputs with the portable int8 program's in quantization steps.
#pragma once

#include <cmath>
#include <string>

#include "delegates/qnn/qnn_library.h"
#include "gtest/gtest.h"

namespace ember {
namespace testing {

// Skips the test when the library cannot be loaded, saying why. When EMBER_QNN_LIBRARY names
// a library (./test.sh sets it after ./setup.sh installed one), a load failure is a failure.
#define EMBER_REQUIRE_QNN()                                                                   \
  do {                                                                                        \
    std::string qnn_error_;                                                                   \
    if (::ember::qnn::QnnLibrary::get(&qnn_error_) == nullptr) {                              \
      const char* env_ = std::getenv("EMBER_QNN_LIBRARY");                                    \
      if (env_ != nullptr && *env_ != '\0') FAIL() << qnn_error_;                             \
      GTEST_SKIP() << qnn_error_;                                                             \
    }                                                                                         \
  } while (0)

}  // namespace testing
}  // namespace ember
