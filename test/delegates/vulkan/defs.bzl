"""The Vulkan delegate tests' common shape."""

def vulkan_device_test(name, srcs, deps = [], size = "small"):
    """A test that runs on a Vulkan device (lavapipe in CI) and skips without one.

    Adds vulkan_test_util.h, turns Mesa's shader cache off (lavapipe would write one under
    $HOME) and the dependencies every such test has.
    """
    native.cc_test(
        name = name,
        size = size,
        srcs = srcs + ["vulkan_test_util.h"],
        env = {"MESA_SHADER_CACHE_DISABLE": "true"},
        deps = [
            "//test/support:lsan_suppressions",
            "//delegates/vulkan:vulkan_backend",
            "//delegates/vulkan:vulkan_blob_builder",
            "//runtime",
            "//third_party/system:gtest_main",
        ] + deps,
    )
