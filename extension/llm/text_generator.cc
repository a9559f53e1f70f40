#include "extension/llm/text_generator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

namespace ember {
namespace llm {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// A whole decimal integer, or nothing (no trailing characters, no overflow).
std::optional<int64_t> parse_int(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  std::string s(text);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return std::nullopt;
  return static_cast<int64_t>(v);
}

Status metadata_error(const std::string& key, const std::string& value, const std::string& want) {
  return Status(Error::InvalidProgram, "program metadata " + key + "='" + value + "' is not " + want +
                                           "; re-export with --metadata " + key + "=... or override it");
}

}  // namespace

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::MaxNewTokens: return "max_new_tokens";
    case StopReason::Eos: return "eos";
    case StopReason::StopString: return "stop_string";
    case StopReason::ContextFull: return "context_full";
    case StopReason::Cancelled: return "cancelled";
  }
  return "unknown";
}

Expected<std::vector<int32_t>> parse_token_list(std::string_view text) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    std::optional<int64_t> v = parse_int(item);
    if (!v || *v < 0 || *v > INT32_MAX) {
      return Status(Error::InvalidArgument, "token list entry '" + std::string(item) +
                                                "' is not a non-negative integer id (write e.g. 1,2,3)");
    }
    ids.push_back(static_cast<int32_t>(*v));
    start = comma + 1;
  }
  return ids;
}

Expected<std::unique_ptr<TextGenerator>> TextGenerator::load(const std::string& model_path,
                                                             std::unique_ptr<Tokenizer> tokenizer,
                                                             const GeneratorOptions& options) {
  const Clock::time_point start = Clock::now();
  std::unique_ptr<TextGenerator> g(new TextGenerator());
  g->method_ = options.method;
  g->tokenizer_ = std::move(tokenizer);
  g->module_ = std::make_unique<Module>(model_path, options.module);
  Status s = g->module_->load();
  if (!s.ok()) return s;
  g->decode_method_ = g->method_;
  if (!g->module_->method_meta(g->method_).ok() && g->module_->method_meta(options.prefill_method).ok() &&
      g->module_->method_meta(options.decode_method).ok()) {
    g->method_ = options.prefill_method;
    g->decode_method_ = options.decode_method;
  }
  s = g->module_->set_num_threads(options.num_threads);
  if (!s.ok()) return s;
  s = g->read_model_settings(options);
  if (!s.ok()) return s;
  s = g->module_->load_method(g->method_);
  if (s.ok()) s = g->module_->load_method(g->decode_method_);
  if (!s.ok()) return s;

  g->context_.reserve(static_cast<size_t>(g->max_seq_len_));
  g->logits_row_.resize(static_cast<size_t>(g->vocab_size_));
  g->step_tokens_.assign(1, 0);
  g->step_positions_.assign(1, 0);
  g->step_tokens_tensor_ = from_blob(g->step_tokens_.data(), {1, 1}, ScalarType::Int64);
  g->step_positions_tensor_ = from_blob(g->step_positions_.data(), {1}, ScalarType::Int64);
  g->step_inputs_ = {Input(g->step_tokens_tensor_), Input(g->step_positions_tensor_)};
  size_t longest_piece = 16;
  if (g->tokenizer_) {
    for (int32_t id = 0; id < g->tokenizer_->vocab_size(); ++id) {
      longest_piece = std::max(longest_piece, g->tokenizer_->token_bytes(id).size());
    }
  }
  g->streamer_.reserve(longest_piece);
  g->load_ms_ = ms_since(start);
  return g;
}

Status TextGenerator::read_model_settings(const GeneratorOptions& options) {
  bool dynamic = false;
  Status s = check_method(method_, &max_chunk_, &dynamic, &vocab_size_);
  if (!s.ok()) return s;
  pad_prefill_ = !dynamic && max_chunk_ > 1;
  if (decode_method_ != method_) {
    int64_t decode_tokens = 0;
    int32_t decode_vocab = 0;
    s = check_method(decode_method_, &decode_tokens, &dynamic, &decode_vocab);
    if (!s.ok()) return s;
    if (decode_vocab != vocab_size_ || (decode_tokens != 1 && !dynamic)) {
      return Status(Error::InvalidArgument, "method '" + decode_method_ + "' must take one token ([1, 1]) and return "
                                                "the same vocabulary as '" + method_ + "'");
    }
  }

  auto entries = module_->metadata();
  if (!entries.ok()) return entries.error();
  std::map<std::string, std::string> md(entries->begin(), entries->end());
  auto int_entry = [&](const std::string& key, std::optional<int64_t>* out) -> Status {
    auto it = md.find(key);
    if (it == md.end()) return Status::Ok();
    *out = parse_int(it->second);
    if (!*out) return metadata_error(key, it->second, "an integer");
    return Status::Ok();
  };
  std::optional<int64_t> md_max_seq, md_vocab, md_bos;
  s = int_entry("max_seq_len", &md_max_seq);
  if (s.ok()) s = int_entry("vocab_size", &md_vocab);
  if (s.ok()) s = int_entry("bos_id", &md_bos);
  if (!s.ok()) return s;
  if (md_vocab && *md_vocab != vocab_size_) {
    return Status(Error::InvalidProgram, "program metadata vocab_size=" + std::to_string(*md_vocab) +
                                             " but the logits have " + std::to_string(vocab_size_) + " entries");
  }
  std::optional<std::vector<int64_t>> md_eos;
  if (auto it = md.find("eos_id"); it != md.end()) {
    auto list = parse_token_list(it->second);
    if (!list.ok()) return metadata_error("eos_id", it->second, "an id or a comma-separated list of ids");
    md_eos = std::vector<int64_t>(list->begin(), list->end());
  }

  max_seq_len_ = options.max_seq_len ? *options.max_seq_len : md_max_seq ? *md_max_seq : max_chunk_;
  if (max_seq_len_ < 1 || max_seq_len_ > (int64_t{1} << 24)) {
    return Status(Error::InvalidArgument, "max_seq_len must be in [1, 2^24], got " + std::to_string(max_seq_len_));
  }
  const int64_t tokenizer_bos = tokenizer_ ? tokenizer_->bos_id() : -1;
  bos_id_ = options.bos_id ? *options.bos_id : md_bos ? *md_bos : tokenizer_bos;
  if (options.eos_ids) {
    eos_ids_ = *options.eos_ids;
  } else if (md_eos) {
    eos_ids_ = *md_eos;
  } else if (tokenizer_ && tokenizer_->eos_id() >= 0) {
    eos_ids_ = {tokenizer_->eos_id()};
  }
  if (bos_id_ < -1 || bos_id_ >= vocab_size_) {
    return Status(Error::InvalidArgument, "bos_id " + std::to_string(bos_id_) + " is outside the vocabulary [0, " +
                                              std::to_string(vocab_size_) + ") (-1 means none)");
  }
  for (int64_t e : eos_ids_) {
    if (e < 0 || e >= vocab_size_) {
      return Status(Error::InvalidArgument, "eos id " + std::to_string(e) + " is outside the vocabulary [0, " +
                                                std::to_string(vocab_size_) + ")");
    }
  }
  if (tokenizer_ && tokenizer_->vocab_size() > vocab_size_) {
    return Status(Error::InvalidArgument, "the tokenizer has " + std::to_string(tokenizer_->vocab_size()) +
                                              " ids but the model's logits only " + std::to_string(vocab_size_) +
                                              ": the tokenizer does not belong to this model");
  }
  return Status::Ok();
}

Status TextGenerator::check_method(const std::string& name, int64_t* max_tokens, bool* dynamic, int32_t* vocab) {
  auto meta = module_->method_meta(name);
  if (!meta.ok()) return meta.error();
  const std::string where = "method '" + name + "'";
  if (meta->num_inputs() != 2 || meta->num_outputs() < 1) {
    return Status(Error::InvalidArgument, where + " takes " + std::to_string(meta->num_inputs()) +
                                              " inputs; a language model program takes (tokens int64 [1, T], "
                                              "input_pos int64 [T]) and returns logits [1, T, vocab]");
  }
  auto tokens = meta->input_tensor_info(0);
  auto positions = meta->input_tensor_info(1);
  auto logits = meta->output_tensor_info(0);
  if (!tokens.ok() || !positions.ok() || !logits.ok() || tokens->dtype != ScalarType::Int64 ||
      tokens->max_sizes.size() != 2 || tokens->max_sizes[0] != 1 || positions->dtype != ScalarType::Int64 ||
      positions->max_sizes.size() != 1 || logits->dtype != ScalarType::Float32 || logits->max_sizes.size() != 3) {
    return Status(Error::InvalidArgument, where + " does not follow the language model convention: inputs "
                                              "(tokens int64 [1, T], input_pos int64 [T]), output logits float32 "
                                              "[1, T, vocab]");
  }
  *max_tokens = tokens->max_sizes[1];
  *dynamic = tokens->dynamic;
  const int64_t entries = logits->max_sizes[2];
  if (*max_tokens < 1 || positions->max_sizes[0] != *max_tokens || entries < 1 || entries > INT32_MAX) {
    return Status(Error::InvalidArgument, where + ": token and position inputs must share the bound of T");
  }
  *vocab = static_cast<int32_t>(entries);
  return Status::Ok();
}

bool TextGenerator::is_eos(int32_t token) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), token) != eos_ids_.end();
}

Status TextGenerator::forward(size_t first, size_t count, const float** logits) {
  Expected<Outputs> out = Status(Error::Internal, "not run");
  size_t rows = count;  // what the call computes: `count`, or the static T it is padded to
  if (count == 1 && (decode_method_ != method_ || !pad_prefill_)) {
    step_tokens_[0] = context_[first];
    step_positions_[0] = static_cast<int64_t>(first);
    out = module_->execute(decode_method_, step_inputs_);
  } else {
    // A static T takes exactly T tokens: the padding rows sit at later positions (clamped into
    // the cache), which no real row attends to and decode overwrites before reading them.
    rows = pad_prefill_ ? static_cast<size_t>(max_chunk_) : count;
    std::vector<int64_t> tokens(rows, context_[first + count - 1]);
    std::copy(context_.begin() + first, context_.begin() + first + count, tokens.begin());
    std::vector<int64_t> positions(rows);
    for (size_t i = 0; i < rows; ++i) positions[i] = std::min<int64_t>(first + i, max_seq_len_ - 1);
    TensorPtr t = make_tensor(tokens, {1, static_cast<int64_t>(rows)});
    TensorPtr p = make_tensor(positions, {static_cast<int64_t>(rows)});
    out = module_->execute(method_, {Input(t), Input(p)});
  }
  if (!out.ok()) return out.error();
  const Output& o = out->at(0);
  if (!o.is_tensor() || o.dtype() != ScalarType::Float32 || o.sizes().size() != 3 ||
      o.sizes()[1] != static_cast<int64_t>(rows) || o.sizes()[2] != vocab_size_) {
    return Status(Error::InvalidProgram, "the model returned logits of an unexpected shape; want [1, " +
                                             std::to_string(rows) + ", " + std::to_string(vocab_size_) + "]");
  }
  *logits = o.data<float>() + (count - 1) * static_cast<size_t>(vocab_size_);
  return Status::Ok();
}

Status TextGenerator::reset() {
  context_.clear();
  unfed_.reset();
  streamer_.reset();
  if (sampler_) sampler_->reseed(sampler_->config().seed);
  return module_->reset_state();  // every method's state, the shared KV cache included
}

Status TextGenerator::generate(std::string_view prompt, const GenerationConfig& config,
                               const TokenCallback& on_token, GenerationResult* result) {
  if (!tokenizer_) {
    return Status(Error::InvalidState, "no tokenizer is loaded: pass one, or give the prompt as token ids");
  }
  std::vector<int32_t> ids;
  Status s = tokenizer_->encode(prompt, &ids);
  if (!s.ok()) return s;
  return generate(ids, config, on_token, result);
}

Status TextGenerator::generate(const std::vector<int32_t>& prompt, const GenerationConfig& config,
                               const TokenCallback& on_token, GenerationResult* result) {
  const Clock::time_point start = Clock::now();
  *result = GenerationResult();
  if (config.max_new_tokens < 0) return Status(Error::InvalidArgument, "max_new_tokens must be >= 0");
  Status s = validate_sampling_config(config.sampling);
  if (!s.ok()) return s;
  for (int32_t id : prompt) {
    if (id < 0 || id >= vocab_size_) {
      return Status(Error::InvalidArgument, "prompt token " + std::to_string(id) + " is outside the vocabulary [0, " +
                                                std::to_string(vocab_size_) + ")");
    }
  }
  std::vector<int32_t> feed;
  if (unfed_) feed.push_back(*unfed_);
  if (context_.empty() && !unfed_ && config.add_bos && bos_id_ >= 0 && (prompt.empty() || prompt[0] != bos_id_)) {
    feed.push_back(static_cast<int32_t>(bos_id_));
  }
  feed.insert(feed.end(), prompt.begin(), prompt.end());
  if (feed.empty()) {
    return Status(Error::InvalidArgument, "the prompt is empty and the model has no BOS token to start from");
  }
  const int64_t room = max_seq_len_ - position();
  if (static_cast<int64_t>(feed.size()) > room) {
    return Status(Error::OutOfBounds, "the prompt needs " + std::to_string(feed.size()) + " positions but " +
                                          std::to_string(room) + " of max_seq_len " + std::to_string(max_seq_len_) +
                                          " remain; shorten it or reset() the conversation");
  }
  // The sampler keeps its RNG across calls of one conversation; a new config starts afresh.
  const SamplingConfig& sc = config.sampling;
  if (!sampler_ || sc.temperature != sampler_config_.temperature || sc.top_k != sampler_config_.top_k ||
      sc.top_p != sampler_config_.top_p || sc.repetition_penalty != sampler_config_.repetition_penalty ||
      sc.seed != sampler_config_.seed) {
    auto made = Sampler::create(vocab_size_, sc);
    if (!made.ok()) return made.error();
    sampler_.emplace(std::move(*made));
    sampler_config_ = sc;
  }
  size_t longest_stop = 0;
  for (const std::string& stop : config.stop_strings) longest_stop = std::max(longest_stop, stop.size());
  recent_text_.clear();
  recent_text_.reserve(2 * longest_stop + 64);
  result->generated_tokens.reserve(static_cast<size_t>(config.max_new_tokens) + 1);
  result->prompt_tokens = static_cast<int32_t>(feed.size() - (unfed_ ? 1 : 0));
  unfed_.reset();

  // Prefill, in chunks the program accepts.
  const float* logits = nullptr;
  for (size_t done = 0; done < feed.size();) {
    const size_t count = std::min(feed.size() - done, static_cast<size_t>(max_chunk_));
    const size_t first = context_.size();
    context_.insert(context_.end(), feed.begin() + done, feed.begin() + done + count);
    s = forward(first, count, &logits);
    if (!s.ok()) return s;
    done += count;
  }
  result->prefill_ms = ms_since(start);
  if (config.max_new_tokens == 0) return Status::Ok();

  Clock::time_point decode_start;
  for (;;) {
    const Clock::time_point sample_start = Clock::now();
    std::memcpy(logits_row_.data(), logits, logits_row_.size() * sizeof(float));
    const int32_t token = sampler_->sample(logits_row_.data(), Span<const int32_t>(context_.data(), context_.size()));
    result->sample_ms += ms_since(sample_start);
    result->generated_tokens.push_back(token);
    if (result->generated_tokens.size() == 1) {
      result->ttft_ms = ms_since(start);
      decode_start = Clock::now();
    }
    std::string_view piece = tokenizer_ ? tokenizer_->token_bytes(token) : std::string_view();
    std::string_view text = streamer_.push(piece);
    bool keep_going = on_token ? on_token(token, text) : true;

    bool stop_string = false;
    if (longest_stop > 0 && !piece.empty()) {
      recent_text_.append(piece.data(), piece.size());
      if (recent_text_.size() > 2 * longest_stop + 32) recent_text_.erase(0, recent_text_.size() - longest_stop - 16);
      for (const std::string& stop : config.stop_strings) {
        if (!stop.empty() && recent_text_.size() >= stop.size() &&
            recent_text_.compare(recent_text_.size() - stop.size(), stop.size(), stop) == 0) {
          stop_string = true;
        }
      }
    }
    if (is_eos(token)) {
      result->stop_reason = StopReason::Eos;
    } else if (stop_string) {
      result->stop_reason = StopReason::StopString;
    } else if (!keep_going) {
      result->stop_reason = StopReason::Cancelled;
    } else if (static_cast<int32_t>(result->generated_tokens.size()) >= config.max_new_tokens) {
      result->stop_reason = StopReason::MaxNewTokens;
    } else if (position() >= max_seq_len_) {
      result->stop_reason = StopReason::ContextFull;
    } else {
      context_.push_back(token);
      const Clock::time_point forward_start = Clock::now();
      s = forward(context_.size() - 1, 1, &logits);
      result->decode_forward_ms += ms_since(forward_start);
      if (!s.ok()) return s;
      continue;
    }
    unfed_ = token;
    break;
  }
  result->decode_ms = ms_since(decode_start);
  std::string_view rest = streamer_.flush();
  if (!rest.empty() && on_token) on_token(-1, rest);
  return Status::Ok();
}

}  // namespace llm
}  // namespace ember
