// Logging macros. Messages below EMBER_MIN_LOG_LEVEL (default Info; build with
// -DEMBER_MIN_LOG_LEVEL=5 to strip every message) compile to nothing.
#pragma once

#include <cstdio>

#include "runtime/platform/platform.h"

#ifndef EMBER_MIN_LOG_LEVEL
#define EMBER_MIN_LOG_LEVEL 1
#endif

#define EMBER_LOG(level, ...)                                                      \
  do {                                                                             \
    if (static_cast<int>(::ember::LogLevel::level) >= EMBER_MIN_LOG_LEVEL) {       \
      char ember_log_buf_[320];                                                    \
      std::snprintf(ember_log_buf_, sizeof(ember_log_buf_), __VA_ARGS__);          \
      ::ember::platform_log(::ember::LogLevel::level, __FILE__, __LINE__, ember_log_buf_); \
    }                                                                              \
  } while (0)
