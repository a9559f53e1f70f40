// ember export IN.pt2 -o OUT.pte [--backend portable|xnnpack|vulkan|qnn]... [--method NAME]
// ember export --method NAME=IN.pt2 [--method NAME=IN.pt2]... -o OUT.pte [options as above]
//                              [--no-fold] [--vulkan-allow-cpu] [--vulkan-fp16] [--xnnpack-threads N]
//                              [--xnnpack-fp16] [--xnnpack-conv-block-bytes N] [--xnnpack-winograd MODE] [--bundle DIR]... [--metadata K=V]... [--keep-qdq] [--op-schema SIG]... [--op-schemas FILE] [--strict-delegation] [--verbose]
//                              [--quantize int8|a16w8|int8-weight|int4-weight [--calibrate PATH] [--group-size N]
//                               [--observer minmax|percentile]
//                               [--percentile P] [--bias-correction] [--quantize-skip PATTERN]...]
// Backends are tried in the order given: each partitioner claims what it supports among the
// nodes the earlier ones left; the rest runs on the portable kernels.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exporter/exporter.h"
#include "exporter/ops/op_schemas.h"
#include "exporter/partition/backend_registry.h"
#include "tools/commands/command_registry.h"
#include "tools/commands/command_util.h"
#include "tools/devtools/bundle.h"

namespace ember {
namespace tools {
namespace {

void usage() {
  std::printf(
      "usage: ember export IN.pt2 -o OUT.pte [--backend portable|xnnpack|vulkan|qnn]... [--method NAME]\n"
      "  -o, --output PATH   the .pte to write (required)\n"
      "  --backend NAME      delegate backend to partition for; repeat (or comma-separate) for several,\n"
      "                      in priority order: xnnpack (CPU), vulkan (GPU), qnn (Qualcomm HTP NPU,\n"
      "                      int8 programs, compiled at export: docs/qnn.md), portable (no delegate;\n"
      "                      the default). Ops no backend takes run on the portable kernels.\n"
      "  --method NAME       method name in the program (default: forward)\n"
      "  --method NAME=IN.pt2  a method from its own archive (repeatable, instead of IN.pt2): one\n"
      "                      program of several methods (encoder + decoder, prefill + decode);\n"
      "                      constants with identical bytes are stored once and shared; bundle\n"
      "                      cases with --bundle NAME:DIR; mutable buffers of the same name,\n"
      "                      dtype, shape and initial value are one state the methods share\n"
      "                      (a prefill and a decode method's KV cache)\n"
      "  --separate-state    with several methods: each keeps its own copy of its buffers\n"
      "  --external-weights W.ptd  keep the weights in the data file W.ptd instead of the program\n"
      "                      (run with --data W.ptd); an existing W.ptd is appended to: tensors it\n"
      "                      holds are reused, so programs exported against it stay valid and\n"
      "                      several programs share one copy of their common weights\n"
      "  --no-fold           skip conv+batch_norm folding\n"
      "  --no-fuse-llm       keep the Llama attention/RMSNorm/RoPE/SwiGLU ops as exported (no\n"
      "                      fused ember_llm:: kernels; for runners without kernels/optimized)\n"
      "  --quantize MODE     Ember's quantizer: int8 (static: int8 weights per channel, int8\n"
      "                      activations calibrated with --calibrate), a16w8 (the same with int16\n"
      "                      activations: for NPUs, --backend qnn) or int8-weight (weight-only\n"
      "                      int8 conv/linear/embedding, float activations) or int4-weight (linear\n"
      "                      and embedding, groups of --group-size inputs, default 32; a layer whose\n"
      "                      rows the group size does not divide gets int8 per channel). Prints\n"
      "                      each layer's error\n"
      "  --calibrate PATH    calibration samples: a directory of input_<i>.npy, a directory of such\n"
      "                      directories, or one .npy stacking inputs along dim 0 ([N, ...])\n"
      "  --observer NAME     activation ranges: minmax (default) or percentile (clips outliers)\n"
      "  --percentile P      the percentile observer's kept share per tail (default 99.99)\n"
      "  --bias-correction   int8: add (W - W_int8) . E[x] over the calibration data to each bias;\n"
      "                      kept only when it lowers the output's error against float\n"
      "  --quantize-skip S   keep layers whose node name or source line contains S in float\n"
      "  --keep-qdq          PT2E-quantized models: keep PyTorch's float reference form (float ops\n"
      "                      between quantize/dequantize) instead of lowering conv2d/linear chains\n"
      "                      to Ember's int8 operators (ember_quantized::, int8 weights)\n"
      "  --vulkan-allow-cpu  let the Vulkan delegates run on a CPU Vulkan device (lavapipe)\n"
      "  --vulkan-fp16       Vulkan delegates store weights and activations as fp16: the delegated\n"
      "                      weights take half the bytes; shaders still compute in fp32 (expect a\n"
      "                      relative error around 1e-3). Delegate inputs/outputs stay float32.\n"
      "                      Needs a GPU with 16-bit storage buffers; elsewhere loading fails with\n"
      "                      NotSupported (re-export without --vulkan-fp16). Needs --backend vulkan\n"
      "  --xnnpack-threads N fallback XNNPACK thread count when the runtime has no thread pool\n"
      "  --xnnpack-conv-block-bytes N\n"
      "                      XNNPACK runs a convolution as output-channel blocks of at most N filter\n"
      "                      bytes when its filters give each thread more than N bytes (blocks stay\n"
      "                      in L2 while XNNPACK's row tiles reread them); 0: never. Default 1 MiB\n"
      "  --xnnpack-winograd auto|off|4x4|2x2\n"
      "                      fp32 3x3 stride-1 convolutions in the Winograd domain: auto (default)\n"
      "                      picks F(4x4, 3x3) or F(2x2, 3x3) tiles or the direct convolution per\n"
      "                      layer by channels and output size; off: all direct; 4x4 / 2x2: those\n"
      "                      tiles wherever it applies. Results within rounding (~2e-6 per layer)\n"
      "  --xnnpack-fp16      XNNPACK delegates run in fp16: weights packed as fp16 (half the memory),\n"
      "                      fp16 activations, native fp16 math on Arm FP16 / x86 AVX512-FP16 CPUs\n"
      "                      (fp32 math on fp16 data on other AVX2 CPUs; where that is slower than\n"
      "                      fp32, on AVX-512 CPUs without AVX512-FP16, loading warns). Inputs and\n"
      "                      outputs stay float32; expect a relative error around 1e-3. Where XNNPACK\n"
      "                      cannot (no fp16 in the CPU, an op without an fp16 kernel) the delegate\n"
      "                      runs in fp32 and loading logs a warning. Needs --backend xnnpack\n"
      "  --bundle DIR        embed a test case (repeatable): DIR/input_<i>.npy and, if present,\n"
      "                      DIR/output_<i>.npy as expected outputs; without outputs they are\n"
      "                      computed with the portable kernels. Check with `ember verify OUT.pte`\n"
      "  --metadata K=V      store a program-level key/value string (repeatable), readable without\n"
      "                      loading a method (Module::metadata, ember inspect); e.g. the LLM\n"
      "                      runner's max_seq_len, vocab_size, bos_id, eos_id\n"
      "  --backend-option NAME.KEY=VALUE\n"
      "                      an option of backend NAME (repeatable): xnnpack.threads=N, xnnpack.fp16=1,\n"
      "                      xnnpack.conv_block_bytes=N, xnnpack.winograd=off, vulkan.allow_cpu=1, vulkan.fp16=1,\n"
      "                      vulkan.min_nodes=N (the --xnnpack-* / --vulkan-* flags set the same)\n"
      "  --op-schema SIG     a custom operator the model calls (torch.library), by its signature:\n"
      "                      'mylib::scaled_tanh(Tensor x, float scale=1.0) -> Tensor' (repeatable).\n"
      "                      Its kernel is your application's: register it under the same name\n"
      "                      (ember::register_kernel) before loading the program; examples/custom_op\n"
      "                      also links one into a copy of this tool for `ember run`\n"
      "  --op-schemas FILE   the same, one signature per line ('#' starts a comment)\n"
      "  --strict-delegation fail when a backend cannot lower a node it claimed (default: that node\n"
      "                      runs on the portable kernels, with a warning saying which and why)\n"
      "  --verbose           list the ops each backend took and the ops left on portable kernels\n");
}

// Writes `bytes` to `out` through a temporary file renamed over it, so a reader (a running
// app, a program using the data file being appended to) never sees a half-written file; false
// (with the message printed) when it cannot.
bool write_file(const std::string& out, const std::vector<uint8_t>& bytes) {
  const std::string tmp = out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) {
      std::fprintf(stderr, "ember export: cannot write %s\n", tmp.c_str());
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::fprintf(stderr, "ember export: cannot replace %s\n", out.c_str());
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

// Writes the data file (when the export made one), then the program that needs it.
bool write_outputs(const std::string& out, const exporter::ExportOptions& options, const std::vector<uint8_t>& pte,
                   const std::vector<uint8_t>& ptd, const exporter::DataFileStats& data_stats) {
  if (!options.external_weights.empty()) {
    if (!write_file(options.external_weights, ptd)) return false;
    std::printf("wrote %s: %zu bytes, %zu tensors (%zu new, %zu bytes; %zu reused from the file or this export)\n",
                options.external_weights.c_str(), ptd.size(), data_stats.entries, data_stats.added_entries,
                data_stats.added_bytes, data_stats.reused_entries);
  }
  return write_file(out, pte);
}

// `--bundle METHOD:DIR` with several methods: each case for its method; cases without expected
// outputs get them from the same methods exported without delegates. Returns 0, or the exit
// status after printing why not.
int read_method_bundles(const std::vector<std::string>& bundle_dirs,
                        const std::vector<std::pair<std::string, std::string>>& methods,
                        exporter::ExportOptions* options) {
  bool any_computed = false;
  for (const std::string& given : bundle_dirs) {
    const size_t colon = given.find(':');
    const std::string method = colon == std::string::npos ? "" : given.substr(0, colon);
    bool known = false;
    for (const auto& m : methods) known |= m.first == method;
    if (!known) {
      std::fprintf(stderr, "ember export: --bundle %s: with several methods write --bundle METHOD:DIR, METHOD one "
                           "of the --method names\n", given.c_str());
      return 2;
    }
    auto c = read_bundle_dir(given.substr(colon + 1));
    if (!c.ok()) {
      std::fprintf(stderr, "ember export: %s\n", std::string(c.status().message()).c_str());
      return 2;
    }
    c->method = method;
    any_computed |= c->expected_outputs.empty();
    options->bundled_cases.push_back(std::move(*c));
  }
  if (!any_computed) return 0;
  exporter::ExportOptions portable = *options;
  portable.partitioners.clear();
  portable.bundled_cases.clear();
  portable.external_weights.clear();
  auto reference = exporter::export_pt2_files(methods, portable);
  if (!reference.ok()) {
    std::fprintf(stderr, "ember export: %s\n", std::string(reference.status().message()).c_str());
    return 1;
  }
  for (const auto& m : methods) {
    std::vector<exporter::BundledCaseData> mine;
    for (const auto& c : options->bundled_cases) if (c.method == m.first) mine.push_back(c);
    absl::Status s = compute_expected_outputs(reference->pte, m.first, &mine);
    if (!s.ok()) {
      std::fprintf(stderr, "ember export: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    size_t k = 0;
    for (auto& c : options->bundled_cases) if (c.method == m.first) c = mine[k++];
  }
  return 0;
}

// `--method NAME=IN.pt2 ...`: one program of several methods; prints each method's partition
// and plan, and what the methods share.
int export_several_methods(const std::vector<std::pair<std::string, std::string>>& methods,
                           const exporter::ExportOptions& options, const std::string& out) {
  auto r = exporter::export_pt2_files(methods, options);
  if (!r.ok()) {
    std::fprintf(stderr, "ember export: %s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  if (absl::Status s = check_program(r->pte, r->ptd); !s.ok()) {
    std::fprintf(stderr, "ember export: the program does not load: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  if (!write_outputs(out, options, r->pte, r->ptd, r->data_file_stats)) return 1;
  std::printf("wrote %s: %zu bytes, %zu methods, %zu segments (%zu bytes); %zu segments (%zu bytes) stored once for "
              "several uses\n",
              out.c_str(), r->pte.size(), r->methods.size(), r->stats.num_segments, r->stats.constant_bytes,
              r->stats.deduplicated_segments, r->stats.deduplicated_bytes);
  for (const auto& [name, m] : r->methods) {
    for (const std::string& w : m.warnings) std::fprintf(stderr, "ember export: %s: warning: %s\n", name.c_str(), w.c_str());
    int portable = 0;
    for (const auto& [op, n] : m.portable_ops) portable += n;
    std::string line = "method " + name + ": " + std::to_string(m.num_nodes_imported) + " nodes imported; arena " +
                       std::to_string(m.plan.arena_size) + " bytes; partition:";
    for (const exporter::BackendSummary& b : m.backends) {
      line += " " + b.backend_id + " " + std::to_string(b.nodes) + " ops in " + std::to_string(b.delegates) +
              (b.delegates == 1 ? " delegate," : " delegates,");
    }
    std::printf("%s portable %d ops\n", line.c_str(), portable);
    if (options.quantize.mode != exporter::QuantizeMode::None) {
      std::printf("%s", exporter::format_quantize_report(m.quantize_report, options.quantize.mode).c_str());
    }
  }
  for (const auto& [key, value] : r->metadata) std::printf("metadata %s=%s\n", key.c_str(), value.c_str());
  if (!r->shared_state.empty()) {
    std::string names;
    for (const std::string& n : r->shared_state) names += (names.empty() ? "" : ", ") + n;
    std::printf("state shared by the methods (--separate-state keeps copies): %s\n", names.c_str());
  }
  if (!options.bundled_cases.empty()) {
    std::printf("bundled %zu test cases; check with ember verify %s\n", options.bundled_cases.size(), out.c_str());
  }
  return 0;
}

int export_command(int argc, char** argv) {
  std::string in, out;
  std::vector<std::pair<std::string, std::string>> method_archives;  // --method NAME=IN.pt2
  exporter::ExportOptions options;
  std::vector<std::string> backends, bundle_dirs;
  std::map<std::string, exporter::BackendOptions> backend_options;  // --backend-option NAME.KEY=VALUE
  bool verbose = false, vulkan_allow_cpu = false, vulkan_fp16 = false;
  int xnnpack_threads = 0;
  bool xnnpack_fp16 = false;
  const char* xnnpack_winograd = nullptr;  // null: the backend's default (auto)
  int64_t xnnpack_conv_block_bytes = -1;  // -1: the runtime's default
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ember export: %s needs a value\n", flag);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") { usage(); return 0; }
    if (a == "-o" || a == "--output") {
      const char* v = value("-o");
      if (!v) return 2;
      out = v;
    } else if (a.rfind("--output=", 0) == 0) {
      out = a.substr(9);
    } else if (a == "--method") {
      const char* v = value("--method");
      if (!v) return 2;
      const std::string given = v;
      const size_t eq = given.find('=');
      if (eq == std::string::npos) {
        options.method_name = given;
      } else if (eq == 0 || eq + 1 == given.size()) {
        std::fprintf(stderr, "ember export: --method %s: write --method NAME=IN.pt2\n", v);
        return 2;
      } else {
        method_archives.emplace_back(given.substr(0, eq), given.substr(eq + 1));
      }
    } else if (a == "--backend" || a.rfind("--backend=", 0) == 0) {
      std::string list;
      if (a == "--backend") {
        const char* v = value("--backend");
        if (!v) return 2;
        list = v;
      } else {
        list = a.substr(10);
      }
      size_t start = 0;
      while (start <= list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        std::string b = list.substr(start, comma - start);
        start = comma + 1;
        if (b.empty()) continue;
        if (b != "portable" && exporter::find_backend(b) == nullptr) {
          std::string known = "portable";
          for (const exporter::BackendEntry* e : exporter::registered_backends()) known += std::string(", ") + e->name;
          std::fprintf(stderr, "ember export: unknown backend '%s' (known: %s)\n", b.c_str(), known.c_str());
          return 2;
        }
        bool seen = false;
        for (const std::string& x : backends) seen |= x == b;
        if (!seen) backends.push_back(b);
      }
    } else if (a == "--verbose" || a == "-v") {
      verbose = true;
    } else if (a == "--vulkan-allow-cpu") {
      vulkan_allow_cpu = true;
    } else if (a == "--vulkan-fp16") {
      vulkan_fp16 = true;
    } else if (a == "--xnnpack-threads") {
      const char* v = value("--xnnpack-threads");
      if (!v) return 2;
      xnnpack_threads = std::atoi(v);
      if (xnnpack_threads < 0) {
        std::fprintf(stderr, "ember export: --xnnpack-threads must be >= 0\n");
        return 2;
      }
    } else if (a == "--xnnpack-conv-block-bytes") {
      const char* v = value("--xnnpack-conv-block-bytes");
      if (!v) return 2;
      char* end = nullptr;
      const long long n = std::strtoll(v, &end, 10);
      if (end == v || *end != '\0' || n < 0) {
        std::fprintf(stderr, "ember export: --xnnpack-conv-block-bytes must be a byte count >= 0, got '%s'\n", v);
        return 2;
      }
      xnnpack_conv_block_bytes = n;
    } else if (a == "--xnnpack-fp16") {
      xnnpack_fp16 = true;
    } else if (a == "--xnnpack-winograd") {
      xnnpack_winograd = value("--xnnpack-winograd");
      if (xnnpack_winograd == nullptr) return 2;
    } else if (a == "--separate-state") {
      options.share_state = false;
    } else if (a == "--external-weights") {
      const char* v = value("--external-weights");
      if (!v) return 2;
      options.external_weights = v;
    } else if (a == "--bundle") {
      const char* v = value("--bundle");
      if (!v) return 2;
      bundle_dirs.push_back(v);
    } else if (a == "--metadata") {
      const char* v = value("--metadata");
      if (!v) return 2;
      const char* eq = std::strchr(v, '=');
      if (eq == nullptr) {
        std::fprintf(stderr, "ember export: --metadata takes KEY=VALUE, got '%s'\n", v);
        return 2;
      }
      options.metadata.emplace_back(std::string(v, eq), std::string(eq + 1));
      absl::Status ms = exporter::check_program_metadata(options.metadata);
      if (!ms.ok()) {
        std::fprintf(stderr, "ember export: %s\n", std::string(ms.message()).c_str());
        return 2;
      }
    } else if (a == "--backend-option") {
      const char* v = value("--backend-option");
      if (!v) return 2;
      const std::string kv = v;
      const size_t dot = kv.find('.'), eq = kv.find('=');
      if (dot == std::string::npos || eq == std::string::npos || dot == 0 || eq < dot + 2) {
        std::fprintf(stderr, "ember export: --backend-option takes NAME.KEY=VALUE (e.g. xnnpack.fp16=1), got '%s'\n",
                     v);
        return 2;
      }
      backend_options[kv.substr(0, dot)][kv.substr(dot + 1, eq - dot - 1)] = kv.substr(eq + 1);
    } else if (a == "--op-schema") {
      const char* v = value("--op-schema");
      if (!v) return 2;
      options.custom_op_schemas.push_back(v);
    } else if (a == "--op-schemas") {
      const char* v = value("--op-schemas");
      if (!v) return 2;
      auto sigs = exporter::read_custom_op_schemas(v);
      if (!sigs.ok()) {
        std::fprintf(stderr, "ember export: --op-schemas: %s\n", std::string(sigs.status().message()).c_str());
        return 2;
      }
      options.custom_op_schemas.insert(options.custom_op_schemas.end(), sigs->begin(), sigs->end());
    } else if (a == "--strict-delegation") {
      options.strict_delegation = true;
    } else if (a == "--no-fold") {
      options.fold_conv_bn = false;
    } else if (a == "--no-fuse-llm") {
      options.fuse_llm_kernels = false;
    } else if (a == "--quantize") {
      const char* v = value("--quantize");
      if (!v) return 2;
      const std::string mode = v;
      if (mode == "int8") options.quantize.mode = exporter::QuantizeMode::Int8;
      else if (mode == "a16w8") options.quantize.mode = exporter::QuantizeMode::A16W8;
      else if (mode == "int8-weight") options.quantize.mode = exporter::QuantizeMode::Int8Weight;
      else if (mode == "int4-weight") options.quantize.mode = exporter::QuantizeMode::Int4Weight;
      else {
        std::fprintf(stderr, "ember export: --quantize takes int8, a16w8, int8-weight or int4-weight, not '%s'\n", v);
        return 2;
      }
    } else if (a == "--calibrate") {
      const char* v = value("--calibrate");
      if (!v) return 2;
      auto samples = exporter::read_calibration_samples(v);
      if (!samples.ok()) {
        std::fprintf(stderr, "ember export: %s\n", std::string(samples.status().message()).c_str());
        return 1;
      }
      for (auto& sample : *samples) options.quantize.calibration.push_back(std::move(sample));
    } else if (a == "--observer") {
      const char* v = value("--observer");
      if (!v) return 2;
      const std::string name = v;
      if (name == "minmax") options.quantize.observer = exporter::RangeObserver::MinMax;
      else if (name == "percentile") options.quantize.observer = exporter::RangeObserver::Percentile;
      else {
        std::fprintf(stderr, "ember export: --observer takes minmax or percentile, not '%s'\n", v);
        return 2;
      }
    } else if (a == "--bias-correction") {
      options.quantize.bias_correction = true;
    } else if (a == "--percentile") {
      const char* v = value("--percentile");
      if (!v) return 2;
      char* end = nullptr;
      options.quantize.percentile = std::strtod(v, &end);
      if (end == v || *end != 0) {
        std::fprintf(stderr, "ember export: --percentile needs a number such as 99.99\n");
        return 2;
      }
    } else if (a == "--group-size") {
      const char* v = value("--group-size");
      if (!v) return 2;
      size_t gs = 0;
      if (!parse_count(v, &gs)) {
        std::fprintf(stderr, "ember export: --group-size needs a positive integer such as 32\n");
        return 2;
      }
      options.quantize.group_size = static_cast<int64_t>(gs);
    } else if (a == "--quantize-skip") {
      const char* v = value("--quantize-skip");
      if (!v) return 2;
      options.quantize.skip.push_back(v);
    } else if (a == "--keep-qdq") {
      options.lower_quantized = false;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "ember export: unknown option '%s' (see ember export --help)\n", a.c_str());
      return 2;
    } else if (in.empty()) {
      in = a;
    } else {
      std::fprintf(stderr, "ember export: unexpected argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (!method_archives.empty() && !in.empty()) {
    std::fprintf(stderr, "ember export: give either IN.pt2 or --method NAME=IN.pt2 archives, not both\n");
    return 2;
  }
  if ((in.empty() && method_archives.empty()) || out.empty()) {
    std::fprintf(stderr, "ember export: need IN.pt2 and -o OUT.pte (see ember export --help)\n");
    return 2;
  }
  if (vulkan_fp16) {
    bool vulkan = false;
    for (const std::string& b : backends) vulkan |= b == "vulkan";
    if (!vulkan) {
      std::fprintf(stderr, "ember export: --vulkan-fp16 needs --backend vulkan\n");
      return 2;
    }
  }
  if (xnnpack_fp16 || xnnpack_conv_block_bytes >= 0 || xnnpack_winograd != nullptr) {
    bool xnn = false;
    for (const std::string& b : backends) xnn |= b == "xnnpack";
    if (!xnn) {
      std::fprintf(stderr, "ember export: %s needs --backend xnnpack\n",
                   xnnpack_fp16                     ? "--xnnpack-fp16"
                   : xnnpack_conv_block_bytes >= 0 ? "--xnnpack-conv-block-bytes"
                                                   : "--xnnpack-winograd");
      return 2;
    }
  }
  // The older per-backend flags are options of the registry's backends.
  if (xnnpack_threads > 0) backend_options["xnnpack"]["threads"] = std::to_string(xnnpack_threads);
  if (xnnpack_fp16) backend_options["xnnpack"]["fp16"] = "1";
  if (xnnpack_winograd != nullptr) backend_options["xnnpack"]["winograd"] = xnnpack_winograd;
  if (xnnpack_conv_block_bytes >= 0) backend_options["xnnpack"]["conv_block_bytes"] = std::to_string(xnnpack_conv_block_bytes);
  if (vulkan_allow_cpu) backend_options["vulkan"]["allow_cpu"] = "1";
  if (vulkan_fp16) backend_options["vulkan"]["fp16"] = "1";
  for (const auto& [name, opts] : backend_options) {
    if (std::find(backends.begin(), backends.end(), name) == backends.end()) {
      std::fprintf(stderr, "ember export: options for backend %s need --backend %s\n", name.c_str(), name.c_str());
      return 2;
    }
  }
  for (const std::string& b : backends) {
    if (b == "portable") continue;
    auto p = exporter::make_partitioner(b, backend_options[b]);
    if (!p.ok()) {
      std::fprintf(stderr, "ember export: %s\n", std::string(p.status().message()).c_str());
      return 2;
    }
    options.partitioners.push_back(*p);
  }
  if (!method_archives.empty()) {
    exporter::ExportOptions with_cases = options;
    if (int rc = read_method_bundles(bundle_dirs, method_archives, &with_cases); rc != 0) return rc;
    return export_several_methods(method_archives, with_cases, out);
  }
  size_t computed = 0;
  for (const std::string& dir : bundle_dirs) {
    auto c = read_bundle_dir(dir);
    if (!c.ok()) {
      std::fprintf(stderr, "ember export: %s\n", std::string(c.status().message()).c_str());
      return 2;
    }
    computed += c->expected_outputs.empty() ? 1 : 0;
    options.bundled_cases.push_back(std::move(*c));
  }
  if (computed > 0) {
    // Reference outputs come from the portable kernels: the same model without delegates.
    exporter::ExportOptions portable = options;
    portable.partitioners.clear();
    portable.bundled_cases.clear();
    portable.external_weights.clear();
    auto reference = exporter::export_pt2_file(in, portable);
    absl::Status s = reference.ok() ? compute_expected_outputs(reference->pte, options.method_name, &options.bundled_cases)
                                    : reference.status();
    if (!s.ok()) {
      std::fprintf(stderr, "ember export: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  auto r = exporter::export_pt2_file(in, options);
  if (!r.ok()) {
    std::fprintf(stderr, "ember export: %s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  for (const std::string& w : r->warnings) std::fprintf(stderr, "ember export: warning: %s\n", w.c_str());
  for (const auto& [key, value] : r->inferred_metadata) {
    std::printf("metadata %s=%s (the KV cache's length; --metadata %s=N overrides)\n", key.c_str(), value.c_str(),
                key.c_str());
  }
  if (!bundle_dirs.empty()) {
    // The bundle must match the method (input/output counts, dtypes, sizes): say so now.
    absl::Status s = check_program(r->pte, r->ptd);
    if (!s.ok()) {
      std::fprintf(stderr, "ember export: the bundled program does not load: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  if (!write_outputs(out, options, r->pte, r->ptd, r->data_file_stats)) return 1;
  std::printf("wrote %s: %zu bytes, %zu instructions (%zu nodes imported, %d conv+bn folded, %d constant-folded), "
              "%zu values, %zu segments (%zu bytes)\n",
              out.c_str(), r->pte.size(), r->stats.num_instructions, r->num_nodes_imported, r->conv_bn_folded, r->constants_folded,
              r->stats.num_values, r->stats.num_segments, r->stats.constant_bytes);
  std::printf("memory plan (%s, %d search steps): arena %zu bytes = shared %zu + inputs/state %zu; lower bound "
              "%zu (best greedy ordering: shared %zu)\n",
              r->plan.strategy.c_str(), r->plan.search_steps, r->plan.arena_size, r->plan.shared_size,
              r->plan.fixed_size, r->plan.lower_bound, r->plan.greedy_size);
  if (options.quantize.mode != exporter::QuantizeMode::None) {
    std::printf("%s", exporter::format_quantize_report(r->quantize_report, options.quantize.mode).c_str());
  }
  if (r->quantized_lowered > 0) {
    std::printf("quantized: %d conv2d/linear chains lowered to ember_quantized:: int8 operators\n", r->quantized_lowered);
  }
  // One-line partition summary: ops per backend (original nodes) and what is left.
  int portable = 0;
  for (const auto& [op, n] : r->portable_ops) portable += n;
  std::string line = "partition:";
  for (const exporter::BackendSummary& b : r->backends) {
    line += " " + b.backend_id + " " + std::to_string(b.nodes) + " ops in " + std::to_string(b.delegates) +
            (b.delegates == 1 ? " delegate," : " delegates,");
  }
  line += " portable " + std::to_string(portable) + " ops";
  std::printf("%s\n", line.c_str());
  if (!bundle_dirs.empty()) {
    std::printf("bundled %zu test cases (%zu with outputs computed by the portable kernels); check with ember verify %s\n",
                bundle_dirs.size(), computed, out.c_str());
  }
  if (verbose) {
    for (const exporter::BackendSummary& b : r->backends) {
      std::printf("  %s took:\n", b.backend_id.c_str());
      for (const auto& [op, n] : b.ops) std::printf("    %5d x %s\n", n, op.c_str());
      for (const std::string& note : b.notes) std::printf("    note: %s\n", note.c_str());
      if (b.fallbacks > 0) std::printf("    %d claimed nodes left on the portable kernels (warnings above)\n", b.fallbacks);
    }
    std::printf("  portable kernels run:\n");
    for (const auto& [op, n] : r->portable_ops) std::printf("    %5d x %s\n", n, op.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace tools
}  // namespace ember

EMBER_REGISTER_COMMAND(export, "convert a torch.export .pt2 into a .pte program", ember::tools::export_command);
