"""Configuration of the Arm64 cross toolchain (Debian's aarch64-linux-gnu-gcc 12)."""

load("@bazel_tools//tools/cpp:unix_cc_toolchain_config.bzl", "cc_toolchain_config")

def aarch64_toolchain_config(name, tags = []):
    prefix = "/usr/bin/aarch64-linux-gnu-"
    cc_toolchain_config(
        name = name,
        tags = tags,
        cpu = "aarch64",
        compiler = "gcc",
        toolchain_identifier = "aarch64-linux-gnu",
        host_system_name = "x86_64-unknown-linux-gnu",
        target_system_name = "aarch64-linux-gnu",
        target_libc = "glibc",
        abi_version = "gcc",
        abi_libc_version = "glibc",
        cxx_builtin_include_directories = [
            "/usr/lib/gcc-cross/aarch64-linux-gnu/12/include",
            "/usr/aarch64-linux-gnu/include",
            "/usr/include",
        ],
        tool_paths = {
            "ar": prefix + "ar",
            "ld": prefix + "ld",
            "cpp": prefix + "cpp",
            "gcc": prefix + "gcc",
            "dwp": prefix + "dwp",
            "gcov": prefix + "gcov",
            "nm": prefix + "nm",
            "objcopy": prefix + "objcopy",
            "objdump": prefix + "objdump",
            "strip": prefix + "strip",
            "llvm-cov": "/bin/false",
        },
        compile_flags = [
            "-fstack-protector",
            "-Wall",
            "-fno-omit-frame-pointer",
            # Arch-independent headers of Debian's -dev packages (flatbuffers), after the
            # cross compiler's own system headers.
            "-idirafter",
            "/usr/include",
        ],
        opt_compile_flags = ["-g0", "-O2", "-DNDEBUG", "-ffunction-sections", "-fdata-sections"],
        dbg_compile_flags = ["-g"],
        cxx_flags = ["-std=c++17"],
        link_flags = ["-Wl,-z,relro,-z,now", "-pass-exit-codes"],
        link_libs = ["-lstdc++", "-lm"],
        opt_link_flags = ["-Wl,--gc-sections"],
        unfiltered_compile_flags = [
            "-fno-canonical-system-headers",
            "-Wno-builtin-macro-redefined",
            "-D__DATE__=\"redacted\"",
            "-D__TIMESTAMP__=\"redacted\"",
            "-D__TIME__=\"redacted\"",
        ],
        coverage_compile_flags = ["--coverage"],
        coverage_link_flags = ["--coverage"],
        supports_start_end_lib = False,
    )
