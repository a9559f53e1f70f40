// Ember's version: the one place it is written. tools/sdk/install.sh reads it for
// EmberConfigVersion.cmake and ember.pc; the C API returns it from ember_version().
#pragma once

#define EMBER_VERSION_MAJOR 0
#define EMBER_VERSION_MINOR 1
#define EMBER_VERSION_PATCH 0
#define EMBER_VERSION_STRING "0.1.0"
